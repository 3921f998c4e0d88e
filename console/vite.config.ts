import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Served by the API server at /console (src/console/serve-console.ts), so every asset URL is
// absolute under it. `npm run dev -w console` proxies the API to a server on :3000.
export default defineConfig({
  base: '/console/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 1024 },
  server: { proxy: { '/api': 'http://127.0.0.1:3000' } },
});
