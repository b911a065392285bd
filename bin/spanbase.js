#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 node --max-old-space-size=1024 --heap-growing-percent=20
// Runs the compiled CLI (dist/cli.js), building it first when a source changed since the last build
// (scripts/build.js; npm install builds it too).
import { ensureServerBuilt } from '../scripts/build.js';

await ensureServerBuilt();
await import('../dist/cli.js');
