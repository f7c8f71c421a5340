import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import { requestActor } from '../../http/current-user.js'
import { CategoriesEnvelope, CategoryEnvelope, CategoryParams, CreateCategoryBody, Done, UpdateCategoryBody } from './schemas.js'
import { categoryView } from './views.js'

const tags = ['MCP Catalogue']
const manage = policy.session({ permission: 'mcp.categories.manage' })

export const categoryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const categories = () => app.services.categoryService

  app.get('/api/mcp/categories', {
    config: { auth: policy.dual('mcp:read', { permission: 'mcp.categories.view' }) },
    schema: {
      tags, summary: 'All categories, by sort_order then name',
      description: '`server_count` counts the servers of the category that the caller can see.',
      response: { 200: CategoriesEnvelope },
    },
  }, async (request) => {
    const list = await categories().list(requestActor(request))
    return { success: true as const, data: { categories: list.map(categoryView) } }
  })

  app.post('/api/mcp/categories', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Create a category',
      description: '409 CATEGORY_NAME_TAKEN when a category has the name already, compared case-insensitively.',
      body: CreateCategoryBody, response: { 201: CategoryEnvelope },
    },
  }, async (request, reply) => {
    const category = await categories().create(request.body, requestActor(request))
    return reply.code(201).send({ success: true as const, message: 'Category created.', data: { category: categoryView(category) } })
  })

  app.put('/api/mcp/categories/:id', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Change a category (partial)',
      description: 'Only the fields sent change; `null` clears description or icon. 409 CATEGORY_NAME_TAKEN.',
      params: CategoryParams, body: UpdateCategoryBody, response: { 200: CategoryEnvelope },
    },
  }, async (request) => {
    const category = await categories().update(request.params.id, request.body, requestActor(request))
    return { success: true as const, message: 'Category updated.', data: { category: categoryView(category) } }
  })

  app.delete('/api/mcp/categories/:id', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Delete a category; its servers become uncategorized',
      description: 'In one transaction: the servers of the category get `category_id: null`, then the category is deleted.',
      params: CategoryParams, response: { 200: Done },
    },
  }, async (request) => {
    const moved = await categories().delete(request.params.id, requestActor(request))
    return { success: true as const, message: `Category deleted; ${moved} server${moved === 1 ? '' : 's'} uncategorized.` }
  })
}
