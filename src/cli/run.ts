// Runs the CLI from source (npm run dev, tests); bin/skyport.js runs the compiled one.
import { runCli } from './main.js';

await runCli(process.argv.slice(2));
