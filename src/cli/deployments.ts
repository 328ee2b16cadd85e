// `deployments`: each configured deployment's health as the running gateways see it
// (published by each instance about once a second, see src/routing/health.ts).
import { modelDeployments } from "../config/deployments.ts";
import { readHealth } from "../routing/health.ts";
import { type CliContext, print, UsageError } from "./context.ts";

export async function deploymentsCommand(ctx: CliContext, args: string[]): Promise<void> {
  if (args.length) throw new UsageError(`deployments takes no arguments (got "${args.join(" ")}")`);
  const health = await readHealth((await ctx.store()).db);
  const configured = new Map<string, { provider: string; upstream_model: string; models: string[] }>();
  for (const m of ctx.config.models)
    for (const d of modelDeployments(m)) {
      const entry = configured.get(d.id);
      if (entry) entry.models.push(m.id);
      else configured.set(d.id, { provider: d.providerId, upstream_model: d.upstreamModel, models: [m.id] });
    }
  const now = Date.now();
  const deployments = [...configured].map(([id, d]) => {
    const views = health.get(id) ?? [];
    const cooling = views.filter((v) => v.coolingUntil !== null);
    const until = cooling.length ? Math.max(...cooling.map((v) => v.coolingUntil!)) : null;
    const latencies = views.filter((v) => v.latencyMs !== null).map((v) => v.latencyMs!);
    return {
      deployment: id,
      ...d,
      /** the running instances that reported it */
      instances: views.length,
      failures: views.length ? Math.max(...views.map((v) => v.failures)) : 0,
      /** ISO time; a time already past: cooled down, waiting for its probe */
      cooling_until: until === null ? null : new Date(until).toISOString(),
      cooldown_reason: cooling.find((v) => v.coolingUntil === until)?.cooldownReason ?? null,
      in_flight: views.reduce((sum, v) => sum + v.inFlight, 0),
      latency_ms: latencies.length
        ? Math.round(latencies.reduce((sum, l) => sum + l, 0) / latencies.length)
        : null,
      /** each instance's own view */
      views: views.map((v) => ({
        instance_id: v.instanceId,
        failures: v.failures,
        cooling_until: v.coolingUntil === null ? null : new Date(v.coolingUntil).toISOString(),
        cooldown_reason: v.cooldownReason,
        in_flight: v.inFlight,
        latency_ms: v.latencyMs,
      })),
    };
  });
  print(ctx, { deployments }, () => {
    if (!deployments.length) return "no deployments configured";
    const rows = deployments.map((d) => {
      let state = "healthy";
      if (d.cooling_until !== null) {
        const left = Date.parse(d.cooling_until) - now;
        state =
          left > 0
            ? `cooling down ${Math.ceil(left / 1000)}s more (${d.cooldown_reason})`
            : `cooled down, awaiting its probe (${d.cooldown_reason})`;
      }
      return [
        d.deployment,
        d.models.join(","),
        d.instances ? String(d.instances) : "none running",
        String(d.in_flight),
        String(d.failures),
        d.latency_ms === null ? "-" : `${d.latency_ms} ms`,
        state,
      ];
    });
    const header = ["deployment", "models", "instances", "in flight", "failures", "latency", "state"];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]) =>
      cells
        .map((c, i) => c.padEnd(widths[i]!))
        .join("  ")
        .trimEnd();
    return [line(header), ...rows.map(line)].join("\n");
  });
}
