import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// The console is built into dist/console, which the server serves at `/` (src/http/console.ts).
export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  build: { outDir: '../dist/console', emptyOutDir: true, sourcemap: true },
});
