import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { policy } from '../auth/policies.js'
import { Ok } from '../http/envelope.js'
import { API_VERSION } from './openapi.js'
import { prefersHtml, sendPage } from '../http/pages.js'
import { escapeHtml, pageLayout } from '../lib/html.js'
import { ACCOUNT_PAGES } from '../modules/auth/page-links.js'
import type { DatabaseLifecycle } from './lifecycle.js'

const SERVICE_NAME = 'Service backend'
const DOCUMENTATION = '/documentation'
const OPENAPI_DOCUMENT = '/documentation/json'
const HEALTH = '/api/health'

const Path = (description: string) => Type.String({ description })
const OptionalPath = (description: string) => Type.Union([Type.String(), Type.Null()], { description })

const LandingIndex = Ok(Type.Object({
  name: Type.String(),
  api_version: Type.String({ description: 'The API contract version (the OpenAPI document\'s `info.version`).' }),
  links: Type.Object({
    sign_in: OptionalPath('The sign-in page for browsers; null until the database is set up.'),
    documentation: OptionalPath('Swagger UI; null while `global.enable_swagger_docs` is off.'),
    openapi: OptionalPath('The OpenAPI document (JSON); null while `global.enable_swagger_docs` is off.'),
    health: Path('Liveness.'),
  }),
}))

interface Landing {
  signIn: string | null
  documentation: string | null
  openapi: string | null
}

function landingPage({ signIn, documentation }: Landing): string {
  const items = [
    signIn === null ? null : `<li><a href="${signIn}">Sign in</a></li>`,
    documentation === null ? null : `<li><a href="${documentation}">API documentation</a></li>`,
    `<li><a href="${HEALTH}">Health</a></li>`,
  ].filter((item) => item !== null)
  const setup = signIn === null ? '<p class="muted">The database is not set up yet (see <code>/api/db/status</code>); sign-in opens once it is.</p>\n' : ''
  return pageLayout(SERVICE_NAME, `<h1>${escapeHtml(SERVICE_NAME)}</h1>
<p>The backend of the MCP server deployment platform.</p>
${setup}<ul>
${items.join('\n')}
</ul>`)
}

/**
 * `GET /`: a browser gets a small page with the ways in, any other caller a JSON index of the
 * same links (a route that exists should not answer 404, and a client probing the root learns
 * where the documentation and health are).
 */
export const landingRoutes: FastifyPluginAsyncTypebox<{ lifecycle: DatabaseLifecycle }> = async (app, { lifecycle }) => {
  /** Before setup there are no settings: sign-in cannot work yet, the documentation is served. */
  async function landing(): Promise<Landing> {
    const docs = !lifecycle.ready || (await lifecycle.current.settings.get('global.enable_swagger_docs'))
    return {
      signIn: lifecycle.ready ? ACCOUNT_PAGES.signIn : null,
      documentation: docs ? DOCUMENTATION : null,
      openapi: docs ? OPENAPI_DOCUMENT : null,
    }
  }

  app.get('/', {
    config: { auth: policy.public(), beforeSetup: true, htmlRefusals: { hint: 'Open this service\'s address without anything after it.' } },
    schema: {
      tags: ['System'], summary: 'The landing page (HTML) or an index of links (JSON)',
      // The path has no words to name it by.
      operationId: 'getLanding',
      description: 'A browser (`Accept` preferring text/html) gets a page naming the service, with links to the sign-in page, the API ' +
        'documentation (while it is on) and health. Every other caller gets the same links as JSON, with the API contract version. ' +
        'Answers before the database is set up too (then without the sign-in link).',
      response: {
        200: {
          description: 'The index (JSON) or the landing page (HTML).',
          content: { 'application/json': { schema: LandingIndex }, 'text/html': { schema: Type.String() } },
        },
      },
    },
  }, async (request, reply) => {
    const links = await landing()
    if (prefersHtml(request)) return sendPage(reply, 200, landingPage(links))
    return {
      success: true as const,
      data: { name: SERVICE_NAME, api_version: API_VERSION, links: { sign_in: links.signIn, documentation: links.documentation, openapi: links.openapi, health: HEALTH } },
    }
  })
}
