// `spillway check` (a config validated, nothing started) and `spillway init` (a Worker project scaffolded).
import { parseConfigText } from "../../config/config.js";
import { ValidationError } from "../../core/validation.js";
import { parseGatewayConfig } from "../../gateway/config.js";
import { parseCheckArgs } from "../args/serve.js";
import { initProject } from "./init.js";
import { loadRlsConfig } from "../grpc/files.js";
import { counted, exitCodeOf, readConfig } from "./run.js";

/** `spillway check --config FILE`: the same validation as serve and the Worker, nothing started. */
export function check(argv: string[]): Promise<number> {
  return exitCodeOf(async () => {
    const { configPath, rlsConfigPath } = parseCheckArgs(argv);
    if (configPath) {
      const config = parseConfigText(await readConfig(configPath), configPath);
      const gateway = parseGatewayConfig(config);
      const routes = gateway ? `, ${counted(gateway.routes.length, "route")} to ${gateway.origin.origin}` : "";
      console.log(`spillway: ${configPath} is valid (${counted(config.policies.length, "policy", "policies")}${routes})`);
    }
    if (rlsConfigPath) {
      const rls = await loadRlsConfig(rlsConfigPath);
      console.log(`spillway: ${rlsConfigPath} is valid (${counted(rls.domains.size, "domain")}: ${[...rls.domains.keys()].join(", ")})`);
    }
  });
}

/** `spillway init DIR`: scaffolds a Worker project that deploys its own spillway.config.json. */
export function init(argv: string[]): Promise<number> {
  return exitCodeOf(async () => {
    if (argv.length !== 1 || argv[0]!.startsWith("-")) throw new ValidationError(argv.find((arg) => arg.startsWith("-")) ?? "DIR", "spillway init takes one directory and no flags: spillway init my-limiter; spillway init --help says more");
    const dir = argv[0]!;
    const files = await initProject(dir);
    console.log(`spillway: wrote ${files.join(", ")} in ${dir}\nnext: cd ${dir} && npm install && npm start   (its npm scripts run on the Node it pins, whatever node is on your PATH)`);
  });
}
