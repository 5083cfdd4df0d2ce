import { readFileSync, readdirSync, readlinkSync } from "node:fs";

// Which process holds the server's end of a loopback TCP connection, from Linux's /proc: the
// kernel's socket table gives the end's inode, and a process's fds link to the inodes it holds.
// With node:cluster the primary accepts and hands the socket to a worker, so this names the
// worker a connection was given to, with nothing added to the product to tell it.

const hexPort = (port: number) => port.toString(16).toUpperCase().padStart(4, "0");

/** The inode of the established socket whose local port is `serverPort` and remote port `clientPort` (IPv4 or IPv6). */
function serverSideInode(serverPort: number, clientPort: number): string | undefined {
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      if (fields.length < 10 || fields[3] !== "01") continue;
      if (fields[1]!.endsWith(`:${hexPort(serverPort)}`) && fields[2]!.endsWith(`:${hexPort(clientPort)}`)) return fields[9];
    }
  }
  return undefined;
}

/** Which of `pids` holds the server's end of the connection from `clientPort` to `serverPort` (undefined: none of them). */
export function ownerOfConnection(serverPort: number, clientPort: number, pids: readonly number[]): number | undefined {
  const inode = serverSideInode(serverPort, clientPort);
  if (inode === undefined) return undefined;
  const wanted = `socket:[${inode}]`;
  const owners = pids.filter((pid) => {
    try {
      return readdirSync(`/proc/${pid}/fd`).some((fd) => {
        try {
          return readlinkSync(`/proc/${pid}/fd/${fd}`) === wanted;
        } catch {
          return false; // closed meanwhile
        }
      });
    } catch {
      return false;
    }
  });
  return owners.length === 1 ? owners[0] : undefined;
}
