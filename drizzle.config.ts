import { defineConfig } from 'drizzle-kit'

// One schema folder and one migration folder per dialect. `npm run db:generate`
// runs drizzle-kit once for each: DRIZZLE_DIALECT=sqlite|postgresql picks which.
const dialect = process.env.DRIZZLE_DIALECT === 'postgresql' ? 'postgresql' : 'sqlite'
const folder = dialect === 'postgresql' ? 'pg' : 'sqlite'

export default defineConfig({
  dialect,
  schema: `./src/db/schema/${folder}/index.ts`,
  out: `./migrations/${folder}`,
  casing: undefined,
  strict: true,
})
