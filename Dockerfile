# chat-gateway's container image (docs/deployment.md).
#
#   docker build -t chat-gateway .
#   docker run -p 8080:8080 -v chat-gateway-data:/app/data --stop-timeout 40 chat-gateway
#
# The base is a build argument so a mirror or a pinned digest can stand in for it.
ARG NODE_IMAGE=node:24-slim

# The build stage has the dev dependencies, which the builds (Vite for the console, tsc for the
# gateway) need and the gateway does not.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The only install script in the tree is the `node` dev dependency's, which fetches a second
# Node binary: the image's own Node is the one that runs everything here.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY bin ./bin
COPY console ./console
# the console imports the gateway's shared vocabularies and answer types from src/
COPY src ./src
# the console and the gateway compiled to JavaScript, with the digest of the source it is a
# build of (scripts/build.ts)
RUN npm run build

FROM ${NODE_IMAGE} AS runtime
# HOST: the gateway listens on loopback by default, unreachable from outside a container.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
# The compiled gateway and the built console, and no src/: bin/chat-gateway.js runs the
# JavaScript, which needs neither Node's type stripper nor its compile cache, and an idle
# instance holds the least memory that way (decision 0042).
COPY --from=build /app/dist ./dist
# store.data_dir is ./data: the SQLite store, its records journal and the first start's
# secrets file. Made here and owned by the runtime user, so a new volume mounted on it is too.
RUN mkdir -p /app/data && chown node:node /app/data && chmod 0700 /app/data
# the base image's unprivileged user (uid 1000); the code stays root's, read-only to it
USER node
VOLUME ["/app/data"]
EXPOSE 8080
# Ready, not merely alive: a gateway whose store does not answer is refused traffic. The base
# image has no curl or wget; Node's fetch does it. It asks loopback, which HOST=0.0.0.0 serves.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Node runs as PID 1: the kernel gives PID 1 no default signal actions, but the gateway
# handles SIGTERM and SIGINT itself (drain, flush records, exit 0) and the gateway starts no
# child processes to reap, so no init is needed (docs/deployment.md, "Signals").
STOPSIGNAL SIGTERM
# Not `npm start`: npm would sit between the signal and Node, and its prestart builds the console.
# Its Node flags are npm start's (test/packaging.test.ts checks): a young generation of 16 MB
# semi-spaces, about 100 MB less at the peak for no measurable CPU (decision 0020).
CMD ["node", "--max-semi-space-size=16", "bin/chat-gateway.js", "serve"]
