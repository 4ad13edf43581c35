import { Router } from 'express';

/** One link of an {@link LlmsTxt} section: `- [title](url): notes`. */
export interface LlmsTxtLink {
  title: string;
  /** Absolute, or relative to the service's root (`/openapi.json`). */
  url: string;
  notes?: string;
}

/** The parts of an llms.txt file (the llmstxt.org format), in the order they are written. */
export interface LlmsTxt {
  /** The H1: the service's name. */
  title: string;
  /** The blockquote: what the service does, in one or two sentences. */
  summary: string;
  /** Paragraphs and lists in Markdown, without headings: prices, how to pay or authenticate. */
  details: string[];
  /** H2 sections of links; a section named `Optional` holds what an agent may skip. */
  sections: { name: string; links: LlmsTxtLink[] }[];
}

/**
 * The links every service's llms.txt starts its `API` section with: the OpenAPI document, its
 * reference page and the MCP endpoint.
 * @param mcpTools what the MCP endpoint offers (its tools), after "Streamable HTTP, stateless; "
 */
export function apiLinks(mcpTools: string): LlmsTxtLink[] {
  return [
    { title: 'OpenAPI document', url: '/openapi.json', notes: 'OpenAPI 3.1, every operation and schema' },
    { title: 'API reference', url: '/docs', notes: 'the same document, rendered' },
    { title: 'MCP endpoint', url: '/mcp', notes: `Streamable HTTP, stateless; ${mcpTools}` },
  ];
}

/**
 * Renders an llms.txt file (llmstxt.org): `# title`, `> summary`, the detail paragraphs, then each
 * section as `## name` with a Markdown list of links.
 */
export function renderLlmsTxt(doc: LlmsTxt): string {
  const lines = [`# ${doc.title}`, '', `> ${doc.summary.replace(/\n/g, ' ')}`, ''];
  for (const paragraph of doc.details) lines.push(paragraph, '');
  for (const section of doc.sections) {
    lines.push(`## ${section.name}`, '');
    for (const link of section.links)
      lines.push(`- [${link.title}](${link.url})${link.notes ? `: ${link.notes}` : ''}`);
    lines.push('');
  }
  return lines.join('\n');
}

/**
 * `GET /llms.txt` (docs/architecture.md, "MCP and llms.txt"): the rendered file as `text/markdown`, built once.
 * @param doc the service's llms.txt
 */
export function llmsTxtRoutes(doc: LlmsTxt): Router {
  const text = renderLlmsTxt(doc);
  const router = Router();
  router.get('/llms.txt', (_req, res) => {
    res.type('text/markdown; charset=utf-8').send(text);
  });
  return router;
}
