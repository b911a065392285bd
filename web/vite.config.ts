import path from 'node:path';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/** The console: built into web/dist, served by the Spanbase process (src/http/routes/console-pages.ts). */
export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  plugins: [react()],
  build: {
    outDir: path.join(import.meta.dirname, 'dist'),
    emptyOutDir: true,
    target: 'es2022',
    // Files are pre-compressed by build.ts; the size report would compress them a second time.
    reportCompressedSize: false,
  },
  server: {
    // `npm run dev:web`: the API (and the console's sign-in) from a Spanbase on the default port.
    proxy: { '/v2': 'http://127.0.0.1:8088' },
  },
});
