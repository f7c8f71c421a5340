import { isoOrNull } from '../../http/envelope.js'
import type { CategoryWithCount } from '../../db/repositories/categories.js'
import type { ServerRow } from '../../db/repositories/server-filters.js'
import type { VersionRow } from '../../db/repositories/server-versions.js'
import { isoTime } from '../../lib/iso-time.js'

export function categoryView(category: CategoryWithCount) {
  return {
    id: category.id,
    name: category.name,
    description: category.description,
    icon: category.icon,
    sort_order: category.sortOrder,
    server_count: category.serverCount,
    created_at: isoTime(category.createdAt),
    updated_at: isoTime(category.updatedAt),
  }
}

export function serverView(server: ServerRow) {
  return {
    id: server.id,
    name: server.name,
    slug: server.slug,
    description: server.description,
    long_description: server.longDescription,
    category_id: server.categoryId,
    tags: server.tags,
    language: server.language,
    runtime: server.runtime,
    transport_type: server.transportType,
    status: server.status,
    featured: server.featured,
    visibility: server.visibility,
    owner_team_id: server.ownerTeamId,
    repository_url: server.repositoryUrl,
    website_url: server.websiteUrl,
    icon_url: server.iconUrl,
    author_name: server.authorName,
    organization: server.organization,
    license: server.license,
    packages: server.packages,
    remotes: server.remotes,
    latest_version: server.latestVersion,
    registry_name: server.registryName,
    source: server.source,
    created_by: server.createdBy,
    created_at: isoTime(server.createdAt),
    updated_at: isoTime(server.updatedAt),
  }
}

export function versionView(version: VersionRow) {
  return {
    id: version.id,
    server_id: version.serverId,
    version: version.version,
    status: version.status,
    changelog: version.changelog,
    release_date: isoOrNull(version.releaseDate),
    packages: version.packages,
    remotes: version.remotes,
    is_latest: version.isLatest,
    created_at: isoTime(version.createdAt),
    updated_at: isoTime(version.updatedAt),
  }
}
