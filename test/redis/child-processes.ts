import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";

const hooks = fileURLToPath(new URL("../../bin/ts-hooks.mjs", import.meta.url));

/**
 * A Node child process running one of our TypeScript fixtures, talking over IPC. Every
 * message it sends is kept, so a test can wait for an event that may already have arrived.
 */
export class TsChild<Command, Event> {
  readonly process: ChildProcess;
  readonly events: Event[] = [];
  private readonly listeners = new Set<() => void>();

  constructor(script: URL, args: string[]) {
    // process.execPath: the Node that runs vitest (the pinned 24), which can strip types.
    this.process = fork(fileURLToPath(script), args, {
      execArgv: ["--experimental-transform-types", "--no-warnings", "--import", hooks],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.process.on("message", (message) => {
      this.events.push(message as Event);
      for (const listener of this.listeners) listener();
    });
  }

  send(command: Command): void {
    this.process.send(command as object);
  }

  /** The first event, past or future, that `matches`; rejects after `timeoutMs` or if the child exits first. */
  waitFor<Found extends Event>(matches: (event: Event) => event is Found, timeoutMs: number, what: string): Promise<Found>;
  waitFor(matches: (event: Event) => boolean, timeoutMs: number, what: string): Promise<Event>;
  waitFor(matches: (event: Event) => boolean, timeoutMs: number, what: string): Promise<Event> {
    return new Promise((resolve, reject) => {
      const finish = (outcome: () => void) => {
        clearTimeout(timer);
        this.listeners.delete(look);
        this.process.off("exit", onExit);
        outcome();
      };
      const look = () => {
        const found = this.events.find(matches);
        if (found !== undefined) finish(() => resolve(found));
      };
      const onExit = () => finish(() => reject(new Error(`child ${this.process.pid} exited while waiting for ${what}`)));
      const timer = setTimeout(() => finish(() => reject(new Error(`no ${what} from child ${this.process.pid} within ${timeoutMs} ms; it sent ${JSON.stringify(this.events)}`))), timeoutMs);
      this.listeners.add(look);
      this.process.once("exit", onExit);
      look();
    });
  }

  /** SIGKILL: a crash, with no chance to clean up. Resolves once the process is gone. */
  async crash(): Promise<void> {
    if (this.exited()) return;
    const gone = new Promise((resolve) => this.process.once("exit", resolve));
    this.process.kill("SIGKILL");
    await gone;
  }

  /** Disconnects (the fixture then closes its store and exits); SIGKILL if it lingers. */
  async stop(graceMs = 2000): Promise<void> {
    if (this.exited()) return;
    const gone = new Promise((resolve) => this.process.once("exit", resolve));
    if (this.process.connected) this.process.disconnect();
    const timer = setTimeout(() => this.process.kill("SIGKILL"), graceMs);
    await gone;
    clearTimeout(timer);
  }

  private exited(): boolean {
    return this.process.exitCode !== null || this.process.signalCode !== null;
  }
}
