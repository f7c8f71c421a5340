import type { Config } from '../../config.js'
import { baseUrlProblem, clientCredentialProblem, displayNameProblem, issuerUrlProblem, oidcClaimNameProblem, oidcScopeProblem } from './rules.js'

/**
 * Settings are defined here, in code, by group, with a type and a default. The
 * database holds only values; unknown keys cannot be created through the API. Plugins add
 * groups under `plugin.<id>.*` through the same `SettingDefinition` shape.
 */

export type SettingType = 'string' | 'number' | 'boolean'
export type SettingValueOf<T extends SettingType> = T extends 'string' ? string : T extends 'number' ? number : boolean
export type SettingPrimitive = string | number | boolean

export interface SettingDefinition<T extends SettingType = SettingType> {
  group: string
  type: T
  /** A value, or a function of the configuration for defaults that depend on PUBLIC_URL. */
  default: SettingValueOf<T> | ((config: Config) => SettingValueOf<T>)
  name: string
  description: string
  /** Stored sealed with AES-256-GCM; never returned by the API. */
  encrypted?: boolean
  /** number: integer bounds. string: length bound. */
  min?: number
  max?: number
  /**
   * A rule of the value's own (see rules.ts), checked on every write — API and CLI — and on every
   * read: a stored value that breaks it (written before the rule existed) reads as the default.
   */
  rule?(value: SettingValueOf<T>): string | null
}

export interface SettingGroup {
  id: string
  name: string
  description: string
}

const define = <T extends SettingType>(definition: SettingDefinition<T>) => definition

export const CORE_GROUPS: readonly SettingGroup[] = [
  { id: 'global', name: 'Global', description: 'Master switches for sign-in, registration, mail and documentation, and what shared (global) satellites run for teams.' },
  { id: 'team', name: 'Teams', description: 'Limits applied to teams.' },
  { id: 'provider-oauth', name: 'Provider OAuth', description: 'Sign-in with a GitHub-compatible identity provider.' },
  {
    id: 'oidc', name: 'OpenID Connect',
    description: 'Sign-in with an OpenID Connect issuer (Keycloak, Microsoft Entra ID, Okta, Google, Authentik …). Register the redirect URI ' +
      '<PUBLIC_URL>/api/auth/oidc/callback at the issuer; OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET seed these settings at start.',
  },
  { id: 'smtp', name: 'SMTP', description: 'Outgoing mail server used for verification, reset and test mails.' },
  { id: 'catalogue', name: 'Catalogue', description: 'The MCP sub-registry API and the sync from an upstream MCP registry.' },
]

export const CORE_SETTINGS = {
  'global.enable_login': define({
    group: 'global', type: 'boolean', default: true, name: 'Enable Login',
    description: 'Master switch for every sign-in method. When off, only existing global-admin sessions keep working.',
  }),
  'global.enable_email_registration': define({
    group: 'global', type: 'boolean', default: true, name: 'Enable Email Registration',
    description: 'Allows new users to register with email and password.',
  }),
  'global.send_mail': define({
    group: 'global', type: 'boolean', default: false, name: 'Email sending enabled',
    description: 'Sends verification and password-reset mails (needs SMTP settings).',
  }),
  'global.require_email_verification': define({
    group: 'global', type: 'boolean', default: true, name: 'Require email verification',
    description: 'Refuses login until the email is verified; effective only while mail sending is enabled.',
  }),
  'global.page_url': define({
    group: 'global', type: 'string', default: '', name: 'Frontend page URL', max: 2048, rule: baseUrlProblem,
    description: 'Base URL of the web frontend for links and redirects; empty means PUBLIC_URL. Empty or an absolute http(s) URL without credentials, query, fragment, whitespace or control characters.',
  }),
  'global.enable_swagger_docs': define({
    group: 'global', type: 'boolean', default: true, name: 'Enable API documentation',
    description: 'Serves /documentation; when off those routes answer 404.',
  }),
  'global.team_servers_on_global_satellites': define({
    group: 'global', type: 'boolean', default: false, name: 'Team servers on global satellites',
    description: 'Team-defined servers may run on global satellites that isolate their instances (isolation other than none). Off: a server a team defined ' +
      "runs only on that team's own satellites. Switching it off moves the team servers' installations off the global satellites at once (to the team's satellites, or pending).",
  }),
  'global.team_quota_per_global_satellite': define({
    group: 'global', type: 'number', default: 20, name: 'Team quota per global satellite', min: 0, max: 10_000,
    description: 'The most installations one team may have placed on one global satellite (a per-user installation counts once, whatever its members). ' +
      'Checked when an installation is placed; lowering it moves nothing that is placed already. 0: teams place nothing on global satellites.',
  }),
  'global.require_2fa_for_admins': define({
    group: 'global', type: 'boolean', default: false, name: 'Require two-factor authentication for admins',
    description: 'While on, a global admin without two-factor authentication is refused (403 TWO_FACTOR_REQUIRED) everywhere but their own profile, ' +
      'the two-factor setup and sign-out, until they switch it on; this applies to their OAuth tokens too.',
  }),
  'team.creation_limit': define({
    group: 'team', type: 'number', default: 3, name: 'Team creation limit', min: 0, max: 10_000,
    description: 'Non-default teams a user may own.',
  }),
  'team.member_limit': define({
    group: 'team', type: 'number', default: 10, name: 'Team member limit', min: 1, max: 100_000,
    description: 'Members of a non-default team, pending invitations included.',
  }),
  'provider.oauth.enabled': define({
    group: 'provider-oauth', type: 'boolean', default: false, name: 'Provider OAuth Enabled',
    description: 'Enables sign-in through the identity provider (also needs a client id and secret).',
  }),
  'provider.oauth.client_id': define({
    group: 'provider-oauth', type: 'string', default: '', name: 'Client ID', max: 255, rule: clientCredentialProblem,
    description: 'OAuth client id registered at the identity provider.',
  }),
  'provider.oauth.client_secret': define({
    group: 'provider-oauth', type: 'string', default: '', name: 'Client secret', encrypted: true, max: 1024, rule: clientCredentialProblem,
    description: 'OAuth client secret registered at the identity provider (stored encrypted).',
  }),
  'provider.oauth.callback_url': define({
    group: 'provider-oauth', type: 'string', name: 'Callback URL', max: 2048,
    default: (config: Config) => `${config.publicUrl}/api/auth/provider/callback`,
    description: 'Must equal the callback URL registered at the identity provider.',
  }),
  'provider.oauth.scope': define({
    group: 'provider-oauth', type: 'string', default: 'user:email', name: 'Scope', max: 255,
    description: 'Scope requested from the identity provider; must include user:email.',
  }),
  'oidc.enabled': define({
    group: 'oidc', type: 'boolean', default: false, name: 'OpenID Connect sign-in enabled',
    description: 'Offers "Sign in with <display name>" (also needs an issuer, a client id and a client secret).',
  }),
  'oidc.issuer': define({
    group: 'oidc', type: 'string', default: '', name: 'Issuer URL', max: 2048, rule: issuerUrlProblem,
    description: 'The issuer identifier, exactly as the issuer names itself (its discovery document is read from <issuer>/.well-known/openid-configuration), ' +
      'e.g. https://keycloak.example.com/realms/acme. https only, except hosts in OUTBOUND_ALLOWED_HOSTS; never a private or loopback address otherwise.',
  }),
  'oidc.client_id': define({
    group: 'oidc', type: 'string', default: '', name: 'Client ID', max: 255, rule: clientCredentialProblem,
    description: 'The client id of this service at the issuer (a confidential client with the redirect URI <PUBLIC_URL>/api/auth/oidc/callback).',
  }),
  'oidc.client_secret': define({
    group: 'oidc', type: 'string', default: '', name: 'Client secret', encrypted: true, max: 1024, rule: clientCredentialProblem,
    description: 'The client secret of this service at the issuer (stored encrypted, never shown again).',
  }),
  'oidc.display_name': define({
    group: 'oidc', type: 'string', default: 'Single sign-on', name: 'Display name', max: 60, rule: displayNameProblem,
    description: 'What the sign-in button says after "Sign in with", e.g. the company or the issuer\'s name.',
  }),
  'oidc.scope': define({
    group: 'oidc', type: 'string', default: 'openid email profile', name: 'Scope', max: 255, rule: oidcScopeProblem,
    description: 'Scopes asked for, separated by spaces; must include openid, and email for the address (profile gives a username and names).',
  }),
  'oidc.email_verified_claim': define({
    group: 'oidc', type: 'string', default: 'email_verified', name: 'Email-verified claim', max: 64, rule: oidcClaimNameProblem,
    description: 'The claim that must be the JSON value true for the email address to be taken (OpenID Connect Core: email_verified). Issuers that never ' +
      'send email_verified may vouch for the address under another name, e.g. Microsoft Entra ID\'s optional claim xms_edov; anything but true refuses the sign-in.',
  }),
  'smtp.host': define({ group: 'smtp', type: 'string', default: '', name: 'Host', max: 255, description: 'SMTP server host name.' }),
  'smtp.port': define({ group: 'smtp', type: 'number', default: 587, name: 'Port', min: 1, max: 65_535, description: 'SMTP server port.' }),
  'smtp.username': define({ group: 'smtp', type: 'string', default: '', name: 'Username', max: 255, description: 'SMTP user name; empty for no authentication.' }),
  'smtp.password': define({
    group: 'smtp', type: 'string', default: '', name: 'Password', encrypted: true, max: 1024,
    description: 'SMTP password (stored encrypted).',
  }),
  'smtp.secure': define({
    group: 'smtp', type: 'boolean', default: false, name: 'TLS from the start',
    description: 'true: TLS from the start (usually port 465); false: STARTTLS when the server offers it.',
  }),
  'smtp.require_tls': define({
    group: 'smtp', type: 'boolean', default: false, name: 'Require STARTTLS',
    description: 'Refuses to send when the server does not offer STARTTLS.',
  }),
  'smtp.from_name': define({ group: 'smtp', type: 'string', default: 'Service', name: 'Sender name', max: 255, description: 'Display name of the sender; SMTP_FROM seeds it.' }),
  'catalogue.registry_api_public': define({
    group: 'catalogue', type: 'boolean', default: false, name: 'Public registry API',
    description: 'Serves /api/registry/v0.1 (and /v0) to anonymous callers; when off, a session or a bearer token with mcp:read is needed.',
  }),
  'catalogue.upstream_registry_url': define({
    group: 'catalogue', type: 'string', default: '', name: 'Upstream registry URL', max: 2048,
    description: 'Base URL of an MCP registry to sync from, without a version segment (e.g. https://registry.modelcontextprotocol.io); empty turns sync off. https only, except hosts in OUTBOUND_ALLOWED_HOSTS.',
  }),
  'catalogue.registry_sync_interval_minutes': define({
    group: 'catalogue', type: 'number', default: 0, name: 'Sync interval (minutes)', min: 0, max: 10_080,
    description: 'Runs the sync from the upstream registry every this many minutes; 0 (default) syncs only when asked through POST /api/mcp/registry/sync.',
  }),
  'smtp.from_email': define({ group: 'smtp', type: 'string', default: '', name: 'Sender address', max: 255, description: 'Address mails are sent from; SMTP_FROM seeds it. No mail goes out without one.' }),
}

export type CoreSettings = typeof CORE_SETTINGS
export type CoreSettingKey = keyof CoreSettings
export type CoreSettingValue<K extends CoreSettingKey> = SettingValueOf<CoreSettings[K]['type']>

/** The core's boolean settings, and a plugin's (`plugin.<id>.<key>`): what a dual route's `publicWhen` may name. */
export type BooleanSettingKey = { [K in CoreSettingKey]: CoreSettings[K]['type'] extends 'boolean' ? K : never }[CoreSettingKey] | `plugin.${string}`

export function defaultValue(definition: SettingDefinition, config: Config): SettingPrimitive {
  return typeof definition.default === 'function' ? definition.default(config) : definition.default
}

/** Why `value` is not acceptable for `definition`, or null when it is. */
export function valueProblem(definition: SettingDefinition, value: unknown): string | null {
  switch (definition.type) {
    case 'boolean':
      return typeof value === 'boolean' ? ruleProblem(definition, value) : 'must be a boolean'
    case 'number':
      if (typeof value !== 'number' || !Number.isInteger(value)) return 'must be an integer'
      if (definition.min !== undefined && value < definition.min) return `must be at least ${definition.min}`
      if (definition.max !== undefined && value > definition.max) return `must be at most ${definition.max}`
      return ruleProblem(definition, value)
    case 'string':
      if (typeof value !== 'string') return 'must be a string'
      if (definition.max !== undefined && value.length > definition.max) return `must be at most ${definition.max} characters`
      return ruleProblem(definition, value)
  }
}

function ruleProblem(definition: SettingDefinition, value: SettingPrimitive): string | null {
  return definition.rule === undefined ? null : (definition.rule as (value: SettingPrimitive) => string | null)(value)
}
