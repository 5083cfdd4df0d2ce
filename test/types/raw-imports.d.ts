// Vite's `?raw` imports (the fixtures workerd cannot read from disk: test/worker/gateway-providers.test.ts).
declare module "*?raw" {
  const text: string;
  export default text;
}
