import { z } from "zod";
import { configId } from "../../domain/config-id.ts";
import { disabledField } from "../config-fields.ts";

export const demoConfig = z
  .object({
    id: configId.describe("the provider's name, which models' `provider` refers to"),
    type: z.literal("demo").describe("the built-in offline model, answering without an upstream"),
    disabled: disabledField,
  })
  .strict();

export type DemoConfig = z.output<typeof demoConfig>;
