import Fastify from 'fastify'

/** The ceiling for this stack on this machine: a bare Fastify route answering a small JSON. */
const app = Fastify({ logger: false })
app.get('/api/health', async () => ({ success: true, data: { status: 'ok' } }))
await app.listen({ port: Number(process.env.PORT ?? 4101), host: '127.0.0.1' })
// A clean exit on SIGTERM, so that `--cpu-prof` can write its profile.
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)))
