import type { SettingsService } from '../settings/service.js'

/** The backend's own accept page, for when no frontend is configured. */
export const ACCEPT_PAGE_PREFIX = '/api/auth/invitations/'

/**
 * Where an invitation's link leads, chosen like the verification and reset links: the frontend's
 * `/invitations/<token>` page when `global.page_url` is set, else the backend's own accept page.
 */
export class AcceptLinks {
  constructor(private readonly settings: Pick<SettingsService, 'get'>, private readonly publicUrl: string) {}

  async acceptUrl(token: string): Promise<string> {
    const pageUrl = (await this.settings.get('global.page_url')).replace(/\/+$/, '')
    return pageUrl !== '' ? `${pageUrl}/invitations/${token}` : `${this.publicUrl}${ACCEPT_PAGE_PREFIX}${token}`
  }
}
