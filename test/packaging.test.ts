// The packaging an operator adopts (docs/deployment.md): the Dockerfile, compose.yaml, the Helm
// chart and the systemd unit, checked with what this machine has. There is no Docker engine
// and no helm here, so: the Dockerfile's stages are replayed in clean folders (its COPY lines
// from the context .dockerignore leaves, its npm steps run as written) and its CMD serves;
// the chart is rendered by test/support/helm-template.ts; the unit goes through
// `systemd-analyze verify` where systemd is installed.
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, posix, relative } from "node:path";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import { parse } from "yaml";
import { loadConfig } from "../src/config/load.ts";
import { CONSOLE_DIST } from "../src/http/console-static.ts";
import {
  buildContext,
  copyArgs,
  envPairs,
  execForm,
  isIgnored,
  parseDockerignore,
  parseStages,
  type Stage,
} from "./support/dockerfile.ts";
import { ChartFailure, renderChart } from "./support/helm-template.ts";
import { START_ENTRY, START_FLAGS } from "./support/start-command.ts";

const ROOT = join(import.meta.dirname, "..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const stages = parseStages(read("Dockerfile"));
const runtime = stages.at(-1)!;
/** the embedded defaults: what a file that leaves a field out gets */
const DEFAULTS = loadConfig({}, undefined);

const args = (stage: Stage, keyword: string) =>
  stage.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);
const workdir = (stage: Stage) => args(stage, "WORKDIR").at(-1) ?? "/";
const stageEnv = (stage: Stage) =>
  Object.assign({}, ...args(stage, "ENV").map(envPairs)) as Record<string, string>;
/** where the runtime image keeps the data folder: store.data_dir's default under WORKDIR */
const DATA_DIR = posix.resolve(workdir(runtime), DEFAULTS.store.data_dir);
const HEALTHCHECK = execForm(args(runtime, "HEALTHCHECK")[0]!.replace(/^(--\S+\s+)*CMD\s+/, ""))!;

describe("Dockerfile", () => {
  it("builds the console and the gateway in a stage with dev dependencies and runs them on Node 24 slim with production dependencies only", () => {
    assert.ok(stages.length >= 2, "a build stage and a runtime stage");
    const copied = args(runtime, "COPY").map(copyArgs);
    const fromBuild = copied.find((c) => c.from);
    assert.ok(fromBuild, "the runtime copies the builds from another stage");
    const build = stages.find((s) => s.name === fromBuild.from)!;
    assert.ok(build, `a stage named ${fromBuild.from}`);
    const buildRuns = args(build, "RUN");
    assert.ok(buildRuns.some((r) => /\bnpm ci\b/.test(r) && !r.includes("--omit=dev")));
    // the console and the compiled gateway (scripts/build.ts)
    assert.ok(buildRuns.some((r) => /\bnpm run build$/.test(r)));
    // dist/ whole: the compiled gateway, and the console where the gateway looks for it
    const consoleDir = relative(ROOT, CONSOLE_DIST).split("\\").join("/");
    assert.equal(consoleDir, "dist/console");
    assert.equal(posix.resolve(workdir(build), fromBuild.sources[0]!), posix.join(workdir(build), "dist"));
    assert.equal(posix.resolve(workdir(runtime), fromBuild.dest), posix.join(workdir(runtime), "dist"));
    // and no source: the launcher runs the build (decision 0042)
    assert.ok(!copied.some((c) => !c.from && c.sources.some((source) => /^(\.\/)?src\/?$/.test(source))));

    assert.match(runtime.from, /^node:24(\.\d+)*-(\w+-)?slim(@sha256:\w+)?$/);
    const runs = args(runtime, "RUN");
    assert.ok(runs.some((r) => /\bnpm ci\b.*--omit=dev/.test(r)));
    assert.ok(!runs.some((r) => /build|vite|tsc/.test(r)), "no build at run time");
    assert.ok(!runs.some((r) => /\bcompile\b/.test(r)), "no compile cache: the build runs without one");
  });

  it("runs `node bin/chat-gateway.js serve` as a user other than root, on the port it exposes, its data folder a volume", () => {
    assert.deepEqual(execForm(args(runtime, "CMD").at(-1)!), ["node", ...START_FLAGS, START_ENTRY, "serve"]);
    assert.equal(args(runtime, "ENTRYPOINT").length, 0, "nothing between the stop signal and Node");
    const user = args(runtime, "USER").at(-1);
    assert.ok(user && !/^(root|0)(:|$)/.test(user), `USER ${user}`);
    const env = stageEnv(runtime);
    assert.equal(env.HOST, "0.0.0.0", "reachable from outside the container");
    assert.ok(
      args(runtime, "EXPOSE")
        .join(" ")
        .split(/\s+/)
        .includes(env.PORT ?? "8080"),
    );
    assert.deepEqual(execForm(args(runtime, "VOLUME")[0]!), [DATA_DIR]);
    assert.equal(args(runtime, "STOPSIGNAL").at(-1) ?? "SIGTERM", "SIGTERM");
    assert.equal(HEALTHCHECK[0], "node");
    assert.match(HEALTHCHECK.join(" "), /\/(readyz|livez)\b/);
  });

  it(".dockerignore sends the sources and keeps data, secrets, tests and node_modules out", () => {
    const patterns = parseDockerignore(read(".dockerignore"));
    for (const path of [
      "package.json",
      "package-lock.json",
      "bin/chat-gateway.js",
      "bin/source-digest.js",
      "scripts/build.ts",
      "tsconfig.json",
      "tsconfig.build.json",
      "src/main.ts",
      "console/index.html",
    ])
      assert.equal(isIgnored(patterns, path), false, path);
    for (const path of [
      ".env",
      "data/gateway.sqlite",
      "first-start-secrets.txt",
      "node_modules/pg/package.json",
      ".git/config",
      "test/cli.test.ts",
      "src/store/db.test.ts",
      "deploy/compose/env.example",
    ])
      assert.equal(isIgnored(patterns, path), true, path);
    const context = buildContext(ROOT);
    for (const stage of stages)
      for (const { from, sources } of args(stage, "COPY").map(copyArgs))
        for (const source of from ? [] : sources)
          assert.ok(
            context.some((f) => f === posix.normalize(source) || f.startsWith(`${posix.normalize(source)}/`)),
            `${source} is in the context`,
          );
    assert.ok(!context.some((f) => f.endsWith(".test.ts")));
  });

  describe("its steps, replayed from a clean folder", () => {
    let dir: string;
    let app: string;
    let gateway: ChildProcess;
    let stdout = "";
    let origin = "";
    let exited: Promise<number | null>;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), "gw-image-"));
      const context = buildContext(ROOT);
      const folders = new Map<string, string>();
      for (const [index, stage] of stages.entries()) {
        // the stage's WORKDIR is this folder; npm finds its cache as it would in the image
        const folder = join(dir, stage.name ?? String(index));
        mkdirSync(folder, { recursive: true });
        folders.set(stage.name ?? String(index), folder);
        const env: Record<string, string | undefined> = { ...process.env };
        for (const instruction of stage.instructions) {
          if (instruction.keyword === "ENV") Object.assign(env, envPairs(instruction.args));
          else if (instruction.keyword === "COPY") {
            const { from, sources, dest } = copyArgs(instruction.args);
            const target = join(folder, posix.relative(workdir(stage), posix.resolve(workdir(stage), dest)));
            for (const source of sources) {
              if (from) {
                const fromFolder = folders.get(from)!;
                const path = posix.relative(workdir(stages.find((s) => s.name === from)!), source);
                cpSync(join(fromFolder, path), target, { recursive: true });
                continue;
              }
              const path = posix.normalize(source);
              const files = context.filter((f) => f === path || f.startsWith(`${path}/`));
              for (const file of files) {
                const into = dest.endsWith("/") && files.length === 1 && file === path ? basename(file) : "";
                const to = into ? join(target, into) : join(target, posix.relative(path, file) || "");
                mkdirSync(dirname(to), { recursive: true });
                cpSync(join(ROOT, file), to);
              }
            }
          } else if (instruction.keyword === "RUN") {
            if (instruction.args.startsWith("npm ")) {
              // as written; the cache first, the registry for what it lacks
              const run = spawnSync("sh", ["-c", instruction.args], {
                cwd: folder,
                env: { ...env, npm_config_prefer_offline: "true" },
                encoding: "utf8",
              });
              assert.equal(run.status, 0, `${instruction.args}\n${run.stdout}\n${run.stderr}`);
            } else {
              // the one other step makes the data folder; its owner is the image's user
              assert.match(instruction.args, new RegExp(`^mkdir -p ${DATA_DIR} && chown `));
              mkdirSync(join(folder, posix.relative(workdir(stage), DATA_DIR)), { recursive: true });
            }
          }
        }
      }
      app = folders.get(runtime.name ?? String(stages.length - 1))!;
      const env: Record<string, string | undefined> = { ...process.env, ...stageEnv(runtime) };
      for (const name of ["GATEWAY_CONFIG", "GATEWAY_DATA_DIR", "DATABASE_URL", "REDIS_URL"])
        delete env[name];
      // loopback and a free port here; the image's HOST=0.0.0.0 and PORT are checked above
      Object.assign(env, { HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "info" });
      const [command, ...rest] = execForm(args(runtime, "CMD").at(-1)!)!;
      assert.equal(command, "node");
      gateway = spawn(process.execPath, rest, { cwd: app, env, stdio: ["ignore", "pipe", "pipe"] });
      exited = new Promise((resolve) => gateway.once("exit", resolve));
      gateway.stderr!.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      await new Promise<void>((resolve, reject) => {
        gateway.stdout!.on("data", (chunk: Buffer) => {
          stdout += chunk.toString();
          const m = /"url":"(http:\/\/[^"]+)\/v1","store":"[^"]*","msg":"gateway listening"/.exec(stdout);
          if (m) {
            origin = m[1]!;
            resolve();
          }
        });
        gateway.once("exit", (code) => reject(new Error(`the gateway exited (${code}):\n${stdout}`)));
      });
    });

    after(async () => {
      // before() may have failed before the gateway started
      if (gateway && gateway.exitCode === null) {
        gateway.kill("SIGKILL");
        await exited;
      }
      // thousands of files under node_modules: retried if the folder is still busy
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    });

    const healthcheck = () =>
      spawnSync(process.execPath, HEALTHCHECK.slice(1), {
        env: { ...process.env, PORT: new URL(origin).port },
        encoding: "utf8",
      }).status;

    it("installs no dev dependency in the runtime", () => {
      // the lock marks what only dev dependencies need (ajv is Fastify's too, so not dev)
      const { packages } = JSON.parse(readFileSync(join(app, "package-lock.json"), "utf8"));
      const dev = Object.keys(packages).filter((path) => packages[path].dev);
      assert.ok(dev.includes("node_modules/vite") && dev.includes("node_modules/typescript"));
      for (const path of dev) assert.ok(!existsSync(join(app, path)), path);
      for (const name of Object.keys(packages[""].dependencies))
        assert.ok(existsSync(join(app, "node_modules", name)), name);
    });

    it("serves: alive, ready on its SQLite data folder, the console built, the health check passing", async () => {
      const health = await fetch(`${origin}/livez`);
      assert.equal(health.status, 200);
      assert.deepEqual(await (await fetch(`${origin}/readyz`)).json(), {
        status: "ready",
        checks: { store: "ok", migrations: "ok", draining: false },
      });
      assert.ok(existsSync(join(app, posix.relative(workdir(runtime), DATA_DIR), "gateway.sqlite")));
      const page = await fetch(`${origin}/console/`);
      assert.equal(page.status, 200);
      assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
      assert.match(await page.text(), /<script[^>]+src="\/console\/assets\//);
      assert.equal(healthcheck(), 0);
    });

    it("answers an OpenAI SDK with the key its first start wrote to the data folder", async () => {
      const file = join(app, posix.relative(workdir(runtime), DATA_DIR), "first-start-secrets.txt");
      const apiKey = readFileSync(file, "utf8").match(/sk-[A-Za-z0-9]{43}/)![0];
      const client = new OpenAI({ apiKey, baseURL: `${origin}/v1`, maxRetries: 0 });
      const completion = await client.chat.completions.create({
        model: "demo",
        messages: [{ role: "user", content: "Hello from the image" }],
      });
      assert.match(completion.choices[0]!.message.content ?? "", /Hello from the image/);
    });

    it("stops on SIGTERM with exit code 0, and the health check then fails", async () => {
      gateway.kill("SIGTERM");
      assert.equal(await exited, 0);
      assert.match(stdout, /"signal":"SIGTERM","msg":"shutting down"/);
      assert.equal(healthcheck(), 1);
    });
  });
});

describe("compose.yaml", () => {
  const compose = parse(read("compose.yaml"), { merge: true });
  const services = compose.services as Record<string, any>;
  const gateways = Object.entries(services).filter(([, s]) => s.build !== undefined);
  const mountedConfig = (service: any) => {
    const target = service.environment.GATEWAY_CONFIG;
    const volume = (service.volumes as string[]).find((v) => v.split(":")[1] === target);
    assert.ok(volume, `the file GATEWAY_CONFIG names (${target}) is mounted`);
    return volume.split(":")[0]!;
  };

  it("runs two gateway instances on one PostgreSQL and one Redis, the same configuration on both", () => {
    assert.ok(gateways.length >= 2, "two gateway instances");
    const urls = (name: string) => new Set(gateways.map(([, s]) => s.environment[name]));
    for (const name of ["DATABASE_URL", "REDIS_URL", "GATEWAY_CONFIG"])
      assert.equal(urls(name).size, 1, name);
    assert.equal(new Set(gateways.map(([, s]) => mountedConfig(s))).size, 1);
    const database = new URL(gateways[0]![1].environment.DATABASE_URL.replace(/\$\{[^}]+\}/g, "x"));
    const redis = new URL(gateways[0]![1].environment.REDIS_URL.replace(/\$\{[^}]+\}/g, "x"));
    assert.equal(database.protocol, "postgres:");
    assert.equal(redis.protocol, "redis:");
    assert.match(services[database.hostname].image, /^postgres:/);
    assert.match(services[redis.hostname].image, /^redis:/);
    const ports = gateways.map(([, s]) => s.ports[0]);
    assert.equal(new Set(ports).size, gateways.length, "each instance on its own host port");
    assert.equal(new Set(gateways.map(([, s]) => JSON.stringify(s.volumes))).size, gateways.length);

    // each starts once both services are healthy; the second after the first (first start)
    for (const [name, service] of gateways) {
      assert.equal(service.depends_on[database.hostname]?.condition, "service_healthy", name);
      assert.equal(service.depends_on[redis.hostname]?.condition, "service_healthy", name);
      assert.notEqual(service.healthcheck?.disable, true, `${name} keeps the image's health check`);
    }
    assert.equal(gateways[1]![1].depends_on[gateways[0]![0]]?.condition, "service_healthy");
    for (const name of [database.hostname, redis.hostname])
      assert.ok(services[name].healthcheck?.test?.length, `${name} has a health check`);
    const dataVolume = (services[database.hostname].volumes as string[])
      .map((v) => v.split(":"))
      .find(([, target]) => target === "/var/lib/postgresql/data");
    assert.ok(dataVolume && dataVolume[0]! in compose.volumes, "PostgreSQL's data on a named volume");
  });

  it("mounts a configuration the gateway accepts, and stops it slower than it drains", () => {
    for (const [name, service] of gateways) {
      const config = loadConfig({}, join(ROOT, mountedConfig(service)));
      const grace = /^(\d+)s$/.exec(service.stop_grace_period)?.[1];
      assert.ok(grace && Number(grace) * 1000 > config.server.shutdown_grace_ms, name);
    }
  });

  it("holds no secret: each password, key and token comes from the environment, required where needed", () => {
    const text = read("compose.yaml");
    const values: string[] = [];
    const walk = (v: unknown, key: string) => {
      if (typeof v === "string") {
        values.push(v);
        if (/PASSWORD|SECRET|TOKEN|_KEY$|AUTH$/.test(key)) assert.match(v, /^\$\{\w+(:[?-][^}]*)?\}$/, key);
      } else if (v && typeof v === "object")
        for (const [k, inner] of Object.entries(v)) walk(inner, Array.isArray(v) ? key : k);
    };
    walk(compose, "");
    for (const v of values) {
      const credentials = /\/\/([^@/]*)@/.exec(v)?.[1];
      if (credentials) assert.match(credentials, /:\$\{\w+:\?[^}]+\}$/, `the password in ${v}`);
    }
    const requirepass = services.redis.command[services.redis.command.indexOf("--requirepass") + 1];
    assert.match(requirepass, /^\$\{REDIS_PASSWORD:\?/);
    assert.doesNotMatch(text, /sk-[A-Za-z0-9]{20,}/);
    for (const line of read("deploy/compose/env.example").split("\n")) {
      const m = /^(\w*(PASSWORD|KEY|TOKEN|SECRET)\w*)=(.*)$/.exec(line);
      if (m) assert.match(m[3]!, /^(replace-[\w-]*)?$/, `${m[1]} is a placeholder`);
    }
  });
});

describe("Helm chart", () => {
  const chart = join(ROOT, "deploy/helm/chat-gateway");
  const shared = {
    secretEnv: { DATABASE_URL: "postgres://gw@db:5432/gw", REDIS_URL: "redis://cache:6379/0" },
  };
  const kinds = (objects: Record<string, any>[]) => objects.map((o) => o.kind).sort();
  const find = (objects: Record<string, any>[], kind: string) => objects.find((o) => o.kind === kind)!;

  it("refuses values that cannot work, naming what is missing", () => {
    const refusal = (values: Record<string, unknown>) => {
      try {
        renderChart(chart, values);
      } catch (err) {
        if (err instanceof ChartFailure) return err.message;
        throw err;
      }
      assert.fail(`rendered with ${JSON.stringify(values)}`);
    };
    assert.match(refusal({}), /DATABASE_URL/);
    assert.match(refusal({ secretEnv: { DATABASE_URL: "postgres://x" } }), /REDIS_URL/);
    assert.match(refusal({ storeMode: "sqlite", autoscaling: { enabled: true } }), /autoscaling/);
    assert.match(refusal({ storeMode: "mysql" }), /storeMode/);
  });

  it("shared store: a Deployment of non-root, read-only pods with probes, a Service, a PodDisruptionBudget", () => {
    const { objects } = renderChart(chart, shared);
    assert.deepEqual(kinds(objects), ["ConfigMap", "Deployment", "PodDisruptionBudget", "Secret", "Service"]);
    const deployment = find(objects, "Deployment");
    const pod = deployment.spec.template.spec;
    const [container] = pod.containers;
    assert.equal(deployment.spec.replicas, 2);
    assert.equal(deployment.spec.strategy.rollingUpdate.maxUnavailable, 0);

    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.notEqual(pod.securityContext.runAsUser, 0);
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(container.securityContext.capabilities.drop, ["ALL"]);
    // the one writable place is the image's data folder
    const writable = container.volumeMounts.filter((m: any) => !m.readOnly).map((m: any) => m.mountPath);
    assert.deepEqual(writable, [DATA_DIR]);

    assert.equal(container.readinessProbe.httpGet.path, "/readyz");
    assert.equal(container.livenessProbe.httpGet.path, "/livez");
    assert.ok(container.startupProbe.httpGet.path);
    const port = container.ports.find((p: any) => p.name === "http");
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe])
      assert.equal(probe.httpGet.port, "http");
    const env = Object.fromEntries(container.env.map((e: any) => [e.name, e.value]));
    assert.equal(env.PORT, String(port.containerPort));
    assert.equal(env.HOST, "0.0.0.0");

    const secret = find(objects, "Secret");
    assert.deepEqual(container.envFrom, [{ secretRef: { name: secret.metadata.name } }]);
    assert.equal(secret.stringData.DATABASE_URL, shared.secretEnv.DATABASE_URL);

    // the configuration is mounted where GATEWAY_CONFIG points, and the gateway accepts it
    const configMap = find(objects, "ConfigMap");
    const mount = container.volumeMounts.find((m: any) => m.name === "config");
    assert.equal(mount.mountPath, posix.dirname(env.GATEWAY_CONFIG));
    assert.equal(pod.volumes.find((v: any) => v.name === "config").configMap.name, configMap.metadata.name);
    const file = join(mkdtempSync(join(tmpdir(), "gw-chart-")), posix.basename(env.GATEWAY_CONFIG));
    writeFileSync(file, configMap.data[posix.basename(env.GATEWAY_CONFIG)]);
    const config = loadConfig({}, file);
    rmSync(dirname(file), { recursive: true });
    assert.equal(config.plans[0]!.quota_tokens, 1_000_000, "Helm's 1e+06 read as a whole number");

    // a stop: the preStop pause, then the drain, within the grace period
    const pause = Number(container.lifecycle.preStop.exec.command[1]);
    assert.ok(pod.terminationGracePeriodSeconds > pause + config.server.shutdown_grace_ms / 1000);

    const labels = deployment.spec.template.metadata.labels;
    const selects = (selector: Record<string, string>) =>
      Object.entries(selector).every(([k, v]) => labels[k] === v);
    const service = find(objects, "Service");
    assert.ok(selects(service.spec.selector));
    assert.equal(service.spec.ports[0].targetPort, "http");
    assert.ok(selects(find(objects, "PodDisruptionBudget").spec.selector.matchLabels));
    assert.deepEqual(deployment.spec.selector.matchLabels, service.spec.selector);
  });

  it("autoscaling on: a HorizontalPodAutoscaler on the Deployment, which then leaves the count to it", () => {
    const { objects } = renderChart(chart, { ...shared, autoscaling: { enabled: true } });
    const hpa = find(objects, "HorizontalPodAutoscaler");
    const deployment = find(objects, "Deployment");
    assert.equal(hpa.spec.scaleTargetRef.name, deployment.metadata.name);
    assert.equal(hpa.spec.scaleTargetRef.kind, "Deployment");
    assert.equal(deployment.spec.replicas, undefined);
  });

  it("a version upgrade's Recreate, as docs/deployment.md sets it, replaces the rolling update", () => {
    const values = { ...shared, strategy: { type: "Recreate", rollingUpdate: null } };
    const { objects } = renderChart(chart, values);
    assert.deepEqual(find(objects, "Deployment").spec.strategy, { type: "Recreate" });
  });

  it("an existing Secret instead, and a changed configuration rolls the pods", () => {
    const { objects } = renderChart(chart, { existingSecret: "gateway-secrets" });
    assert.ok(!kinds(objects).includes("Secret"));
    const pod = find(objects, "Deployment").spec.template;
    assert.deepEqual(pod.spec.containers[0].envFrom, [{ secretRef: { name: "gateway-secrets" } }]);
    const changed = renderChart(chart, { existingSecret: "gateway-secrets", config: { log_level: "debug" } });
    const annotations = find(changed.objects, "Deployment").spec.template.metadata.annotations;
    assert.notEqual(annotations["checksum/config"], pod.metadata.annotations["checksum/config"]);
  });

  it("SQLite store: one replica on a claimed volume, replaced by Recreate", () => {
    const { objects } = renderChart(chart, { storeMode: "sqlite", replicaCount: 3 });
    assert.ok(!kinds(objects).includes("Secret"));
    const deployment = find(objects, "Deployment");
    assert.equal(deployment.spec.replicas, 1);
    assert.equal(deployment.spec.strategy.type, "Recreate");
    const claim = find(objects, "PersistentVolumeClaim");
    const data = deployment.spec.template.spec.volumes.find((v: any) => v.name === "data");
    assert.equal(data.persistentVolumeClaim.claimName, claim.metadata.name);
  });

  it("every value a template reads is in values.yaml, which holds no secret", () => {
    const values = parse(readFileSync(join(chart, "values.yaml"), "utf8"));
    const templates = [
      "_helpers.tpl",
      "configmap.yaml",
      "deployment.yaml",
      "hpa.yaml",
      "pdb.yaml",
      "pvc.yaml",
    ]
      .concat(["secret.yaml", "service.yaml", "NOTES.txt"])
      .map((f) => readFileSync(join(chart, "templates", f), "utf8"))
      .join("\n");
    const paths = new Set([...templates.matchAll(/\.Values((?:\.\w+)+)/g)].map((m) => m[1]!.slice(1)));
    assert.ok(paths.size > 20);
    for (const path of paths) {
      // secretEnv's keys are the operator's: the chart checks for the two it needs
      if (path.startsWith("secretEnv.")) continue;
      let at: any = values;
      for (const key of path.split(".")) {
        assert.ok(at && typeof at === "object" && key in at, `.Values.${path} is in values.yaml`);
        at = at[key];
      }
    }
    assert.deepEqual(values.secretEnv, {});
    assert.equal(values.existingSecret, "");
  });
});

describe("systemd unit", () => {
  const unitPath = join(ROOT, "deploy/systemd/chat-gateway.service");
  const service = new Map<string, string[]>();
  let section = "";
  for (const line of readFileSync(unitPath, "utf8").split("\n")) {
    const header = /^\[(\w+)\]$/.exec(line);
    if (header) section = header[1]!;
    const m = /^(\w+)=(.*)$/.exec(line);
    if (m && section === "Service") service.set(m[1]!, [...(service.get(m[1]!) ?? []), m[2]!]);
  }
  const one = (key: string) => service.get(key)?.at(-1);

  it("runs the gateway as its own user, stops it slower than it drains, and writes nowhere but its data folder", () => {
    assert.ok(one("User") && one("User") !== "root");
    const [node, ...rest] = one("ExecStart")!.split(" ");
    assert.match(node!, /^\/\S+\/node$/);
    assert.deepEqual(rest, [...START_FLAGS, START_ENTRY, "serve"], "npm start's Node flags");
    assert.ok(one("WorkingDirectory")?.startsWith("/"));
    assert.ok(one("EnvironmentFile"));
    assert.equal(one("ExecReload"), "/bin/kill -HUP $MAINPID");
    assert.equal(one("Restart"), "on-failure");
    assert.equal(one("KillSignal"), "SIGTERM");
    assert.ok(Number(one("TimeoutStopSec")) * 1000 > DEFAULTS.server.shutdown_grace_ms);
    assert.equal(one("NoNewPrivileges"), "yes");
    assert.equal(one("ProtectSystem"), "strict");
    assert.equal(one("PrivateTmp"), "yes");
    const env = Object.fromEntries(
      (service.get("Environment") ?? []).map((e) => e.split("=") as [string, string]),
    );
    assert.ok(env.GATEWAY_DATA_DIR);
    assert.ok(one("ReadWritePaths")!.split(/\s+/).includes(env.GATEWAY_DATA_DIR));
    assert.equal(`/var/lib/${one("StateDirectory")}`, env.GATEWAY_DATA_DIR);
  });

  const analyze = spawnSync("systemd-analyze", ["--version"]);
  it("passes systemd-analyze verify without a warning", {
    skip: analyze.status === 0 ? false : "systemd-analyze is not installed: not run",
  }, () => {
    let unit = unitPath;
    // verify checks that ExecStart's binary exists: where Node is elsewhere, this test's own
    const node = /^(\S+)/.exec(one("ExecStart")!)![1]!;
    if (!existsSync(node)) {
      const copy = join(mkdtempSync(join(tmpdir(), "gw-unit-")), "chat-gateway.service");
      writeFileSync(
        copy,
        readFileSync(unitPath, "utf8").replace(`ExecStart=${node}`, `ExecStart=${process.execPath}`),
      );
      unit = copy;
    }
    const run = spawnSync("systemd-analyze", ["verify", unit], { encoding: "utf8" });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(`${run.stdout}${run.stderr}`.trim(), "");
  });
});
