import { availableParallelism } from 'node:os'
import { configDefaults, defineConfig } from 'vitest/config'

/**
 * The reference satellite's tests keep a module graph of their own per file: they start satellites
 * and sandboxed servers that share process-wide state (the instance folders, the environment passed
 * down), and two of their files interfere when one process runs both. Every other file builds its
 * own apps and databases and runs beside the files before it in the same worker process, so the
 * service's modules are loaded once per worker rather than once per file (on two cores: the suite
 * in 670 s instead of 925 s, with 40 % less CPU time).
 */
const SATELLITE = ['test/satellite/**/*.test.ts']

export default defineConfig({
  test: {
    // Each file builds its own apps and databases; files run in parallel processes. They wait on
    // PostgreSQL, SMTP and child processes much of the time, so one more process than there are
    // cores keeps the cores busy (on two cores: the whole suite in 560 s instead of 890 s).
    pool: 'forks',
    maxWorkers: availableParallelism() + 1,
    testTimeout: 20_000,
    hookTimeout: 30_000,
    projects: [
      { extends: true, test: { name: 'satellite', include: SATELLITE, isolate: true } },
      { extends: true, test: { name: 'service', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...SATELLITE], isolate: false } },
    ],
  },
})
