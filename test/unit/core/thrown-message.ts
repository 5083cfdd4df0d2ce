/** What `run` throws, as its message, or "accepted" when it throws nothing: error texts compared exactly. */
export function thrownMessage(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    return (error as Error).message;
  }
  return "accepted";
}
