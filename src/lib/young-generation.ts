// V8 grows the young generation when most of what it allocates survives its collections, and
// keeps it grown. Start-up is that case: the modules, the configuration schema and the
// catalog are allocated to be kept, and grew the young generation of `npm start` (16 MB
// semi-spaces) to its 32 MB limit before the gateway served a call; an idle gateway then held
// it, used or not (decision 0038). Importing this module holds the growth; the gateway's first
// call lets it go, and under load it grows as it did.
//
// src/main.ts imports it first: a module's imports are evaluated in order, so the hold is in
// place before the rest of the program's modules run.
import { setFlagsFromString } from "node:v8";

/** V8's default (`node --v8-options`), what the growth is let go to. */
const DEFAULT_GROWTH_FACTOR = 2;

// the one V8 flag about the heap's size that V8 reads at each collection, not once at start
setFlagsFromString("--semi-space-growth-factor=1");
let held = true;

/** Lets the young generation grow again: the gateway serves calls. */
export function letYoungGenerationGrow(): void {
  if (!held) return;
  held = false;
  setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH_FACTOR}`);
}
