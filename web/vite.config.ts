import { defineConfig } from "vite";

// Static files only: `longrun serve` embeds dist/, a deployed stack uploads it to S3.
export default defineConfig({
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, assetsInlineLimit: 0 },
  server: { proxy: { "/v1": "http://127.0.0.1:8080", "/config.json": "http://127.0.0.1:8080" } },
});
