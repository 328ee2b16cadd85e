// V8 grows the young generation when most of what it allocates survives its collections, and
// keeps it grown. Start-up is that case: the modules, the configuration schema and the
// catalog are allocated to be kept, and grew the young generation of `npm start` (16 MB
// semi-spaces) to its 32 MB limit before the gateway served a call; an idle gateway then held
// it, used or not (decision 0038). Importing this module holds the growth; the gateway's first
// call lets it go, and under load it grows as it did.
//
// It works only if nothing else was read first: Node reads and compiles a module's whole static
// graph before it runs any of it, so src/main.ts imports this module and nothing else, and
// imports the rest of the program after it has run.
import { setFlagsFromString } from "node:v8";

const FLAG = "--semi-space-growth-factor";

/** An operator's own growth factor (a Node flag or NODE_OPTIONS), left as they set it. */
const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)].some(
  (arg) => arg === FLAG || arg.startsWith(`${FLAG}=`),
);

/** V8's default (`node --v8-options`), what the growth is let go to. */
const DEFAULT_GROWTH_FACTOR = 2;

// the one V8 flag about the heap's size that V8 reads at each collection, not once at start
if (!given) setFlagsFromString(`${FLAG}=1`);
let held = !given;

/** Lets the young generation grow again: the gateway serves calls. */
export function letYoungGenerationGrow(): void {
  if (!held) return;
  held = false;
  setFlagsFromString(`${FLAG}=${DEFAULT_GROWTH_FACTOR}`);
}
