// Builds the console into dist/console at the repository root, for the gateway to serve at
// /console (src/http/console-static.ts). Run from the root as `vite build console`, which
// makes this folder vite's root.
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

export default defineConfig({
  base: "/console/",
  plugins: [react()],
  build: {
    outDir: "../dist/console",
    emptyOutDir: true,
    // the gateway's Content-Security-Policy forbids data: scripts and inline code: keep every
    // asset a file of its own
    assetsInlineLimit: 0,
    sourcemap: false,
  },
  server: {
    // `npx vite console` during development: the console API and the admin API of a local
    // gateway, same origin for the session cookie and the Origin check
    proxy: {
      "/api": { target: "http://127.0.0.1:8080", changeOrigin: false },
      "/admin": { target: "http://127.0.0.1:8080", changeOrigin: false },
    },
  },
});
