import { describe, expect, it } from "vitest";
import { TurnQueue } from "../../../../src/node/http/turn-queue.js";

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe("TurnQueue (the Node edges' requests of one turn, run together at its end)", () => {
  it("runs nothing during the turn, then every item of the turn in the order it came", async () => {
    const ran: number[] = [];
    const queue = new TurnQueue<number>((item) => ran.push(item));
    for (const item of [3, 1, 2]) queue.push(item);
    await Promise.resolve();
    expect(ran).toEqual([]);
    await nextTurn();
    expect(ran).toEqual([3, 1, 2]);
  });

  it("leaves what is pushed while a turn's items run to the next turn, and runs every turn", async () => {
    const ran: string[] = [];
    const queue: TurnQueue<string> = new TurnQueue((item) => {
      ran.push(item);
      if (item === "a") queue.push("a again");
    });
    queue.push("a");
    queue.push("b");
    await nextTurn();
    expect(ran).toEqual(["a", "b"]);
    await nextTurn();
    expect(ran).toEqual(["a", "b", "a again"]);
    queue.push("later");
    await nextTurn();
    expect(ran).toEqual(["a", "b", "a again", "later"]);
  });
});
