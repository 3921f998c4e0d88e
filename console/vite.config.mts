import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

// Served by the API server at /console (src/console/serve-console.ts), so every asset URL is
// absolute under it. The build goes into the server's dist/, which is what production ships.
// `npm run dev:console` serves the sources and proxies the API to a server on :3000.
export default defineConfig({
  root,
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'react' } },
  build: { outDir: fileURLToPath(new URL('../dist/console', import.meta.url)), emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 1024 },
  server: { proxy: { '/api': 'http://127.0.0.1:3000' } },
});
