import formBody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { policy } from '../../auth/policies.js'
import { userCaller } from '../../http/current-user.js'
import { AppError, errors } from '../../http/errors.js'
import { prefersHtml, sendPage } from '../../http/pages.js'
import { isoTime } from '../../lib/iso-time.js'
import { FormTokens } from '../auth/form-tokens.js'
import { SIGN_IN_LINK } from '../auth/page-links.js'
import { tokensPage, TOKENS_PAGE, type TokensPageView } from './page.js'
import { TOKEN_RULES } from './routes.js'
import { PERSONAL_TOKEN_SCOPES, type PersonalTokenScope } from './scopes.js'

const tags = ['Personal access tokens']
const Page = { description: 'An HTML page (no script, a strict Content-Security-Policy).', content: { 'text/html': { schema: Type.String() } } }
const SeeOther = Type.Null({ description: '303 with a Location header' })
const CsrfToken = Type.Optional(Type.String({ maxLength: 128, description: 'The value the page gave; without the right one the page is shown again with 403 INVALID_CSRF_TOKEN.' }))
const htmlRefusals = { hint: 'Sign in, then open this page again from your account page.', links: [SIGN_IN_LINK] }
const FORM_EXPIRED = 'This form had expired or was not sent from this page; it is shown again, send it once more.'
const FORM_RULES = 'Form-encoded, with the page\'s `csrf_token` (a signed double submit with the `account_form` cookie, bound to the session); an ' +
  '`Origin` header, when sent, must be this service\'s own. A stale or missing token shows the page again with 403 INVALID_CSRF_TOKEN.'

export interface TokensPageOptions {
  /** Origins a browser's form may come from (http/origins.ts). */
  origins: ReadonlySet<string>
  /** The key of the forms' CSRF tokens. */
  formKey: Buffer
}

const CreateForm = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 1000 })),
  scopes: Type.Optional(Type.Union([Type.String({ maxLength: 50 }), Type.Array(Type.String({ maxLength: 50 }), { maxItems: 10 })])),
  team_id: Type.Optional(Type.String({ maxLength: 100, description: 'Empty: every team of the caller.' })),
  expires_in_days: Type.Optional(Type.String({ maxLength: 10 })),
  csrf_token: CsrfToken,
}, { additionalProperties: false })

type Form = { name?: string; scopes?: string | string[]; team_id?: string; expires_in_days?: string }

/** The create form's fields as the service takes them, or what to tell the person who filled it in. */
function parseForm(body: Form): { name: string; scopes: PersonalTokenScope[]; teamId?: string; expiresInDays: number } | string {
  const name = (body.name ?? '').trim()
  if (name.length === 0 || name.length > 100) return 'Give the token a name of 1 to 100 characters.'
  const picked = body.scopes === undefined ? [] : Array.isArray(body.scopes) ? body.scopes : [body.scopes]
  const scopes = PERSONAL_TOKEN_SCOPES.filter((scope) => picked.includes(scope))
  if (scopes.length === 0 || scopes.length !== new Set(picked).size) return 'Choose at least one of the scopes listed.'
  const days = Number(body.expires_in_days)
  if (!/^\d{1,3}$/.test(body.expires_in_days ?? '') || days < 1 || days > 365) return 'The lifetime is a whole number of days from 1 to 365.'
  return { name, scopes, teamId: body.team_id === undefined || body.team_id === '' ? undefined : body.team_id, expiresInDays: days }
}

/**
 * The tokens page of the account pages: list, create (the new token shown once, on the answer to
 * the form only), delete. Plain forms, no script; the JSON API under /api/users/me/tokens does
 * the same for programs.
 */
export const personalTokenPageRoutes: FastifyPluginAsyncTypebox<TokensPageOptions> = async (app, { origins, formKey }) => {
  await app.register(formBody)
  const forms = new FormTokens(formKey, () => app.services.sessions.cookie)

  function refuseCrossSite(request: FastifyRequest): void {
    const origin = request.headers.origin
    if (origin !== undefined && !origins.has(origin)) {
      throw new AppError(403, 'FORBIDDEN', `Cross-site form refused: it was sent from ${origin}, which is not this service.`, { origin })
    }
  }

  async function render(request: FastifyRequest, reply: FastifyReply, status: number, view: Omit<TokensPageView, 'csrfToken' | 'tokens' | 'teams'> = {}) {
    const caller = userCaller(request)
    const { services } = app
    const [{ rows }, teams] = await Promise.all([services.personalTokens.list(caller.userId, 100, 0), services.teams.forUser(caller.userId)])
    const names = new Map(teams.map((team) => [team.id, team.name]))
    const now = services.personalTokens.now().getTime()
    const tokens = rows.map((row) => ({
      id: row.id, name: row.name, scopes: row.scope.split(' '), teamName: row.teamId === null ? null : names.get(row.teamId),
      expiresAt: isoTime(row.expiresAt), expired: row.expiresAt.getTime() <= now, lastUsedAt: row.lastUsedAt === null ? null : isoTime(row.lastUsedAt),
    }))
    const csrfToken = forms.issue(request, reply, 'personal-tokens', caller.credentialId)
    return sendPage(reply, status, tokensPage({ ...view, csrfToken, tokens, teams: teams.map(({ id, name }) => ({ id, name })) }))
  }

  /** A refusal: the page again for a browser, with the refusal's status and code; the envelope for anyone else. */
  function refuse(request: FastifyRequest, reply: FastifyReply, error: AppError, form?: TokensPageView['form']) {
    if (!prefersHtml(request)) throw error
    reply.errorCode = error.code
    return render(request, reply, error.statusCode, { notice: { tone: 'error', text: error.code === 'INVALID_CSRF_TOKEN' ? FORM_EXPIRED : error.message }, form })
  }
  const staleForm = () => new AppError(403, 'INVALID_CSRF_TOKEN', 'This form has expired or was not sent from this service; open the page again.')

  app.get(TOKENS_PAGE, {
    config: { auth: policy.session(), htmlRefusals },
    schema: {
      tags, summary: 'The personal access tokens page (HTML)',
      description: 'Lists the signed-in user\'s tokens (never their values) with a delete button each, and a form to create one. ' +
        '`deleted=1` adds the notice the deletion leads to. Without a session: 401 (a page with a sign-in link, for a browser).',
      querystring: Type.Object({ deleted: Type.Optional(Type.Literal('1', { description: 'Say that a token was just deleted.' })) }, { additionalProperties: false }),
      response: { 200: Page },
    },
  }, async (request, reply) => render(request, reply, 200, request.query.deleted === '1' ? { notice: { tone: 'success', text: 'The token is deleted: it no longer works.' } } : {}))

  app.post(TOKENS_PAGE, {
    config: { auth: policy.session(), htmlRefusals },
    attachValidation: true,
    schema: {
      tags, summary: 'Create a personal access token from the tokens page',
      description: `The page's create form. The answer is the page with the new token, shown this once (a later visit never shows it). ` +
        `The rules of \`POST /api/users/me/tokens\`; a refused form (400, 409 TOKEN_LIMIT_REACHED) is shown again with the reason. ${FORM_RULES} ${TOKEN_RULES}`,
      consumes: ['application/x-www-form-urlencoded'],
      body: CreateForm,
      response: { 201: Page },
    },
  }, async (request, reply) => {
    refuseCrossSite(request)
    const caller = userCaller(request)
    const body = (typeof request.body === 'object' && request.body !== null ? request.body : {}) as Form & { csrf_token?: unknown }
    const presented = typeof body.csrf_token === 'string' ? body.csrf_token : undefined
    if (!forms.valid(request, 'personal-tokens', presented, caller.credentialId)) return refuse(request, reply, staleForm())
    if (request.validationError) return refuse(request, reply, errors.validation([], 'The form is not one this page sends; fill it in again.'))
    const typed = { name: body.name, scopes: typeof body.scopes === 'string' ? [body.scopes] : body.scopes, teamId: body.team_id, days: body.expires_in_days }
    const input = parseForm(body)
    if (typeof input === 'string') return refuse(request, reply, errors.validation([], input), typed)
    try {
      const { token, row } = await app.services.personalTokens.create({ userId: caller.userId, ip: request.ip }, input)
      return await render(request, reply, 201, { created: { name: row.name, token } })
    } catch (error) {
      if (!(error instanceof AppError) || error.statusCode >= 500) throw error
      return refuse(request, reply, error, typed)
    }
  })

  app.post(`${TOKENS_PAGE}/:id/delete`, {
    config: { auth: policy.session(), htmlRefusals },
    schema: {
      tags, summary: 'Delete a personal access token from the tokens page',
      description: `A delete button's form: the token stops working at once, and the answer is 303 back to the page. 404 for an id that is not one of the caller's tokens. ${FORM_RULES}`,
      consumes: ['application/x-www-form-urlencoded'],
      params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
      body: Type.Object({ csrf_token: CsrfToken }, { additionalProperties: false }),
      response: { 303: SeeOther },
    },
  }, async (request, reply) => {
    refuseCrossSite(request)
    const caller = userCaller(request)
    if (!forms.valid(request, 'personal-tokens', request.body.csrf_token, caller.credentialId)) return refuse(request, reply, staleForm())
    await app.services.personalTokens.revokeOwn({ userId: caller.userId, ip: request.ip }, request.params.id)
    return reply.redirect(`${TOKENS_PAGE}?deleted=1`, 303)
  })
}
