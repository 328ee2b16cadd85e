// The id format of everything the configuration names (providers, models, plans): also what
// a client may send as `model`, since a name outside it names nothing.
import { z } from "zod";

export const ID_MAX_CHARS = 128;
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/-]*$/;
export const ID_RULE = "letters, digits and . _ : / - (starting with a letter or digit)";

export const configId = z.string().min(1).max(ID_MAX_CHARS).regex(ID_PATTERN, `must be ${ID_RULE}`);
