// A Redis Cluster whose first master has a replica, for the Cluster failover test: the
// replica takes over the master's slots when the master dies (cluster-node-timeout 1000).
import { type RedisClusterServers, type RedisServer, startRedis, startRedisCluster } from "./redis-server.js";
import { hashSlot } from "../src/stores/redis/nodes.js";
import { redisCli, untilStreaming } from "./redis-sentinel.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface ReplicatedCluster extends RedisClusterServers {
  /** The replica of nodes[0], in sync and streaming when this resolves. */
  replica: RedisServer;
  /** The first and last slot that nodes[0] serves. */
  slots: [number, number];
}

/** Three masters (cluster-node-timeout `nodeTimeoutMs`) and one replica of the first, every node agreeing on it. */
export async function startClusterWithReplica(nodeTimeoutMs = 1000): Promise<ReplicatedCluster> {
  const servers = await startRedisCluster(3, nodeTimeoutMs);
  let replica: RedisServer | undefined;
  try {
    const master = servers.nodes[0]!;
    replica = await startRedis(["--cluster-enabled", "yes", "--cluster-config-file", "nodes-replica.conf", "--cluster-node-timeout", String(nodeTimeoutMs), "--repl-diskless-sync-delay", "0"]);
    // The master's own setting is what a replica's sync waits on: diskless sync without its 5 s
    // wait for more replicas (the replica's flag alone left every start 5 s longer).
    await redisCli(master.port, "config", "set", "repl-diskless-sync-delay", "0");
    const masterId = await redisCli(master.port, "cluster", "myid");
    // What `redis-cli --cluster add-node … --cluster-slave` does, without its one-second polls:
    // the replica meets the cluster, then replicates the master once it has heard of it.
    await redisCli(replica.port, "cluster", "meet", "127.0.0.1", String(master.port));
    for (let attempt = 0; (await redisCli(replica.port, "cluster", "replicate", masterId)) !== "OK"; attempt++) {
      if (attempt > 300) throw new Error(`the replica on port ${replica.port} never heard of master ${masterId}`);
      await sleep(20);
    }
    for (let attempt = 0; ; attempt++) {
      const synced = (await redisCli(replica.port, "info", "replication")).includes("master_link_status:up");
      const views = await Promise.all(servers.nodes.map((node) => redisCli(node.port, "cluster", "nodes")));
      if (synced && views.every((view) => view.split("\n").some((line) => line.includes(`:${replica!.port}@`) && line.includes(`slave ${masterId}`)))) break;
      if (attempt > 300) throw new Error("the replica did not join and sync within 30 s");
      await sleep(100);
    }
    const line = (await redisCli(master.port, "cluster", "nodes")).split("\n").find((entry) => entry.includes("myself"))!;
    const [first, last] = line.split(" ").at(-1)!.split("-").map(Number);
    // Linked is not streaming yet (untilStreaming): a write on the master's slots, waited for.
    let probe = 0;
    while (hashSlot(`spillway-harness:probe-${probe}`) < first! || hashSlot(`spillway-harness:probe-${probe}`) > last!) probe++;
    await untilStreaming(master.port, [replica.port], `spillway-harness:probe-${probe}`);
    const stop = servers.stop;
    const replicaServer = replica;
    return { ...servers, replica, slots: [first!, last!], stop: async () => void (await Promise.all([stop(), replicaServer.stop()])) };
  } catch (error) {
    await Promise.all([servers.stop(), replica?.stop()]);
    throw error;
  }
}
