import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each file builds its own apps and databases; files run in parallel processes.
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
})
