import { describe, expect, it } from "vitest";
import { type Answer, FUZZ_RUNS, answerOf, assertGeneratedBodies, nested } from "../fuzz/bodies.js";
import { post } from "./helpers.js";

/** The same fuzz as test/unit/node/serve/api-fuzz.test.ts, against the Worker inside workerd. */
describe("/v1 fuzz on the Worker: no 5xx, every 400 names its field", () => {
  async function send(route: string, body: string): Promise<Answer> {
    return answerOf(await post(route, body));
  }

  it("a key nested 10,000 levels deep is a 400 naming it", async () => {
    const answer = await send("/v1/check", `{"key":${nested(10_000, 1, false)},"policy":"demo"}`);
    expect(answer).toMatchObject({ status: 400, body: { field: "key" } });
  });

  it(`${FUZZ_RUNS} generated bodies`, async () => {
    await assertGeneratedBodies(send);
  }, 300_000);
});
