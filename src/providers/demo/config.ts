import { z } from "zod";
import { configId } from "../../config/id.ts";

export const demoConfig = z.object({ id: configId, type: z.literal("demo") }).strict();

export type DemoConfig = z.output<typeof demoConfig>;
