import type { Config } from '../../config.js'

/** One setting to write: its key and the value as given (checked against the definition on write). */
export interface SettingChange {
  key: string
  value: unknown
}

/**
 * SMTP_URL, SMTP_FROM, PROVIDER_OAUTH_CLIENT_ID/SECRET and OIDC_ISSUER/CLIENT_ID/CLIENT_SECRET configure a deployment without a click.
 * They apply only to settings nobody has set yet; a value chosen through the API always wins.
 */
export function environmentSeeds(config: Config): SettingChange[] {
  const seeds: SettingChange[] = []
  if (config.smtpUrl !== null) {
    const url = new URL(config.smtpUrl)
    const secure = url.protocol === 'smtps:'
    seeds.push(
      { key: 'smtp.host', value: url.hostname },
      { key: 'smtp.port', value: url.port === '' ? (secure ? 465 : 587) : Number(url.port) },
      { key: 'smtp.username', value: decodeURIComponent(url.username) },
      { key: 'smtp.password', value: decodeURIComponent(url.password) },
      { key: 'smtp.secure', value: secure },
      { key: 'global.send_mail', value: true },
    )
  }
  // Without a sender no mail goes out: SMTP_URL alone would leave mail off.
  if (config.smtpFrom !== null) {
    seeds.push({ key: 'smtp.from_email', value: config.smtpFrom.address })
    if (config.smtpFrom.name !== null) seeds.push({ key: 'smtp.from_name', value: config.smtpFrom.name })
  }
  if (config.providerOauthClientId !== null && config.providerOauthClientSecret !== null) {
    seeds.push(
      { key: 'provider.oauth.client_id', value: config.providerOauthClientId },
      { key: 'provider.oauth.client_secret', value: config.providerOauthClientSecret },
      { key: 'provider.oauth.enabled', value: true },
    )
  }
  if (config.oidcSeed !== null) {
    seeds.push(
      { key: 'oidc.issuer', value: config.oidcSeed.issuer },
      { key: 'oidc.client_id', value: config.oidcSeed.clientId },
      { key: 'oidc.client_secret', value: config.oidcSeed.clientSecret },
      { key: 'oidc.enabled', value: true },
    )
  }
  return seeds
}
