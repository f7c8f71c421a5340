import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each file builds its own apps and databases; files run in parallel processes. They wait on
    // PostgreSQL, SMTP and child processes much of the time, so one more process than there are
    // cores keeps the cores busy (on two cores: the whole suite in 560 s instead of 890 s).
    pool: 'forks',
    maxWorkers: availableParallelism() + 1,
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
})
