import { z } from "zod";
import { configId } from "../../domain/config-id.ts";

export const demoConfig = z.object({ id: configId, type: z.literal("demo") }).strict();

export type DemoConfig = z.output<typeof demoConfig>;
