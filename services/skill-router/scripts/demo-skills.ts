// The skills and the MCP server the skill-router demo (scripts/demo.ts) provides on this machine and
// registers: what each answers here, and what is registered for it (the skills' registrations, and what
// the demo sends each, are data: demo-skills.json, by stem).
import type { RegisterSkillRequest } from '../src/schemas';
import REGISTRATIONS from './demo-skills.json';
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

/** The stem of each demo skill: the keys of demo-skills.json. */
type DemoStem = keyof typeof REGISTRATIONS;

/**
 * How each demo skill's endpoint answers: two translators, a free summarizer, a swap quoter, and an
 * OCR that answers the wrong shape.
 */
const BEHAVIOURS: Record<DemoStem, SkillBehaviour> = {
  translator: {
    kind: 'healthy',
    respond: (i) => ({
      translation: `[${(i as { target_language: string }).target_language}] ${(i as { text: string }).text}`,
    }),
  },
  'translator-pro': {
    kind: 'healthy',
    delayMs: 60,
    respond: (i) => ({ translation: `(pro) ${(i as { text: string }).text}` }),
  },
  summarizer: {
    kind: 'healthy',
    respond: (i) => ({
      summary: String((i as { text: string }).text)
        .split(' ')
        .slice(0, 8)
        .join(' '),
    }),
  },
  'swap-quote': {
    kind: 'healthy',
    respond: (i) => ({ out_amount: Number((i as { amount: number }).amount) * 150, route: 'demo-amm' }),
  },
  'broken-ocr': { kind: 'healthy', respond: () => ({ text: 42 }) },
};

/** The five demo skills, in the order of demo-skills.json. */
export const DEMO_SKILLS: DemoSkill[] = (Object.keys(REGISTRATIONS) as DemoStem[]).map((stem) => ({
  stem,
  behaviour: BEHAVIOURS[stem],
  ...REGISTRATIONS[stem],
}));
