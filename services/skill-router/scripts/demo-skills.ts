// The skills and the MCP server the skill-router demo (scripts/demo.ts) provides on this machine and
// registers: what each answers, and what is registered for it.
import type { RegisterSkillRequest } from '../src/schemas';
import { structured, type LocalTool } from './local-mcp-servers';
import type { SkillBehaviour } from './local-skills';

/** The demo's MCP server: a currency desk with two tools (rates are made up). */
const RATES: Record<string, number> = { USD: 1, EUR: 0.92, GBP: 0.79, JPY: 151.2 };
/** The currency desk's tools: a conversion and the rate list. */
export const CURRENCY_TOOLS: LocalTool[] = [
  {
    name: 'convert_currency',
    title: 'Currency converter',
    description:
      "Converts an amount of money between US dollars, euros, British pounds and Japanese yen at today's exchange rate.",
    inputSchema: {
      type: 'object',
      properties: {
        amount: { type: 'number', exclusiveMinimum: 0, examples: [25] },
        from: { type: 'string', enum: Object.keys(RATES) },
        to: { type: 'string', enum: Object.keys(RATES) },
      },
      required: ['amount', 'from', 'to'],
    },
    outputSchema: {
      type: 'object',
      properties: { amount: { type: 'number' }, currency: { type: 'string' }, rate: { type: 'number' } },
      required: ['amount', 'currency', 'rate'],
    },
    call: (args) => {
      const rate = (RATES[String(args.to)] ?? 1) / (RATES[String(args.from)] ?? 1);
      const amount = Math.round(Number(args.amount) * rate * 100) / 100;
      return structured({ amount, currency: String(args.to), rate: Math.round(rate * 10_000) / 10_000 });
    },
  },
  {
    name: 'list_currencies',
    title: 'Supported currencies',
    description: 'Lists the supported currency codes with their exchange rate against USD.',
    inputSchema: { type: 'object' },
    outputSchema: {
      type: 'object',
      properties: { rates: { type: 'object', additionalProperties: { type: 'number' } } },
      required: ['rates'],
    },
    call: () => structured({ rates: RATES }),
  },
];

/** A skill the demo provides on this machine. */
export interface DemoSkill {
  /** Its endpoint's name among the local skills, and the stem of its id (`demo-<stem>-<run>`). */
  stem: string;
  /** How its endpoint answers. */
  behaviour: SkillBehaviour;
  /** What is registered, but the id and the endpoint. */
  registration: Omit<RegisterSkillRequest, 'skill_id' | 'endpoint'>;
  /** What the demo sends it when it is a route's best match (none: `{}`). */
  input?: unknown;
}

const TRANSLATION_INPUT = {
  type: 'object',
  properties: {
    text: { type: 'string', minLength: 1 },
    target_language: { type: 'string', enum: ['es', 'fr', 'de'] },
  },
  required: ['text', 'target_language'],
};
const TRANSLATION_OUTPUT = {
  type: 'object',
  properties: { translation: { type: 'string' } },
  required: ['translation'],
};
const A_TRANSLATION = { text: 'A fast and friendly agent', target_language: 'es' };

/** The five demo skills: two translators, a free summarizer, a swap quoter, and an OCR that answers the wrong shape. */
export const DEMO_SKILLS: DemoSkill[] = [
  {
    stem: 'translator',
    behaviour: {
      kind: 'healthy',
      respond: (i) => ({
        translation: `[${(i as { target_language: string }).target_language}] ${(i as { text: string }).text}`,
      }),
    },
    registration: {
      name: 'Quick translator',
      provider: 'Demo Labs',
      description: 'Translates short texts between English, Spanish, French and German.',
      capabilities: ['translation', 'text'],
      chains: ['solana'],
      pricing: { model: 'per_call', price_usd: 0.002 },
      input_schema: TRANSLATION_INPUT,
      output_schema: TRANSLATION_OUTPUT,
    },
    input: A_TRANSLATION,
  },
  {
    stem: 'translator-pro',
    behaviour: {
      kind: 'healthy',
      delayMs: 60,
      respond: (i) => ({ translation: `(pro) ${(i as { text: string }).text}` }),
    },
    registration: {
      name: 'Pro translator',
      provider: 'Lingua Agents',
      description: 'Human-quality translation of product texts and documentation.',
      capabilities: ['translation', 'localization'],
      chains: ['solana', 'base'],
      pricing: { model: 'per_call', price_usd: 0.009 },
      input_schema: TRANSLATION_INPUT,
      output_schema: TRANSLATION_OUTPUT,
    },
    input: A_TRANSLATION,
  },
  {
    stem: 'summarizer',
    behaviour: {
      kind: 'healthy',
      respond: (i) => ({
        summary: String((i as { text: string }).text)
          .split(' ')
          .slice(0, 8)
          .join(' '),
      }),
    },
    registration: {
      name: 'Summarizer',
      provider: 'Demo Labs',
      description: 'Summarizes long articles and reports into a few sentences.',
      capabilities: ['summarization', 'text'],
      chains: [],
      pricing: { model: 'free', price_usd: 0 },
      input_schema: {
        type: 'object',
        properties: {
          text: { type: 'string', minLength: 1 },
          max_words: { type: 'integer', minimum: 5, maximum: 200 },
        },
        required: ['text'],
      },
      output_schema: { type: 'object', properties: { summary: { type: 'string' } }, required: ['summary'] },
    },
    input: {
      text: 'Markets moved sideways today while stablecoin volume rose sharply across exchanges and chains.',
    },
  },
  {
    stem: 'swap-quote',
    behaviour: {
      kind: 'healthy',
      respond: (i) => ({ out_amount: Number((i as { amount: number }).amount) * 150, route: 'demo-amm' }),
    },
    registration: {
      name: 'Swap quoter',
      provider: 'DeFi Tools',
      description: 'Quotes token swaps between SOL and USDC on Solana.',
      capabilities: ['defi', 'swap', 'quote'],
      chains: ['solana'],
      pricing: { model: 'per_call', price_usd: 0.001 },
      input_schema: {
        type: 'object',
        properties: {
          from: { type: 'string', enum: ['SOL', 'USDC'] },
          to: { type: 'string', enum: ['SOL', 'USDC'] },
          amount: { type: 'number', exclusiveMinimum: 0, maximum: 1000 },
        },
        required: ['from', 'to', 'amount'],
      },
      output_schema: {
        type: 'object',
        properties: { out_amount: { type: 'number' }, route: { type: 'string' } },
        required: ['out_amount', 'route'],
      },
    },
    input: { from: 'SOL', to: 'USDC', amount: 2 },
  },
  {
    stem: 'broken-ocr',
    behaviour: { kind: 'healthy', respond: () => ({ text: 42 }) },
    registration: {
      name: 'Receipt OCR',
      provider: 'Scan Co',
      description: 'Reads receipts and returns their text (answers the wrong shape).',
      capabilities: ['ocr', 'text'],
      chains: ['solana'],
      pricing: { model: 'per_call', price_usd: 0.003 },
      input_schema: {
        type: 'object',
        properties: { image_url: { type: 'string', format: 'uri' } },
        required: ['image_url'],
      },
      output_schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    },
  },
];
