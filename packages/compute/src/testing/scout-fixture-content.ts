// The fixture sector's text: the RSS, Atom and Hacker News entries the fixture feed server serves, and their renderings.

/** An hour, in milliseconds (entry ages are given in them). */
export const HOUR = 3_600_000;
const DAY = 24 * HOUR;

interface FixtureEntry {
  title: string;
  url: string;
  summary: string;
  /** Age relative to `now` in milliseconds, or `null`: the entry has no date. */
  age: number | null;
}

/** The RSS feed "Fixture Tech Daily": 7 entries (one French, one with a 2-character title, one 40 days old, one undated). */
export const RSS_ENTRIES: FixtureEntry[] = [
  {
    title: 'AI coding agents now write a third of new code at startups',
    url: 'https://news.fixture.test/2026/ai-coding-agents/?utm_source=rss&utm_medium=feed',
    summary: '<p>Startups report that <b>AI coding agents</b> produce a third of merged code.</p>',
    age: 2 * HOUR,
  },
  {
    title: 'Invoice automation startups raise record funding',
    url: 'https://news.fixture.test/2026/invoice-automation-funding',
    summary: '<p>Investors back invoice automation for small businesses.</p>',
    age: 10 * HOUR,
  },
  {
    title: 'Open source maintainers struggle with AI generated pull requests',
    url: 'https://news.fixture.test/2026/maintainers-ai-pull-requests',
    summary: 'Maintainers close low quality pull requests opened by AI coding agents.',
    age: 30 * HOUR,
  },
  {
    title: 'Les banques européennes adoptent enfin les paiements instantanés',
    url: 'https://news.fixture.test/2026/banques-paiements-instantanes',
    summary:
      'Les grandes banques européennes proposent désormais les virements instantanés à tous leurs clients.',
    age: 6 * HOUR,
  },
  { title: 'AI', url: 'https://news.fixture.test/2026/ai', summary: 'A one-word headline.', age: 3 * HOUR },
  {
    title: 'The dot-com bubble, twenty-five years later',
    url: 'https://news.fixture.test/2001/dot-com-retro',
    summary: 'A look back at the dot-com crash and what founders learned.',
    age: 40 * DAY,
  },
  {
    title: 'Small businesses adopt AI bookkeeping assistants',
    url: 'https://news.fixture.test/2026/ai-bookkeeping',
    summary: 'Small businesses use AI assistants to categorise expenses and chase invoices.',
    age: null,
  },
];

/** The Atom feed "Fixture Weekly": 5 entries, two of them duplicates of RSS entries (same canonical URL; same title). */
const ATOM_ENTRIES: FixtureEntry[] = [
  {
    title: 'AI coding agents now write a third of new code at startups',
    url: 'https://NEWS.fixture.test:443/2026/ai-coding-agents?fbclid=abc123#comments',
    summary: 'The same story, syndicated.',
    age: 3 * HOUR,
  },
  {
    title: 'Agent frameworks consolidate as AI coding tools mature',
    url: 'https://weekly.fixture.test/agent-frameworks-consolidate',
    summary: 'Three agent frameworks merged this quarter as AI coding tools mature.',
    age: 3 * DAY,
  },
  {
    title: 'Invoice Automation Startups Raise Record Funding!',
    url: 'https://weekly.fixture.test/invoice-funding?ref=homepage',
    summary: 'A funding round roundup.',
    age: 12 * HOUR,
  },
  {
    title: 'Code review bottlenecks slow teams adopting AI agents',
    url: 'https://weekly.fixture.test/code-review-bottlenecks',
    summary: 'Teams adopting AI agents say code review is now the slowest step.',
    age: 4 * DAY,
  },
  {
    title: 'Payment reconciliation tools see rising demand from small businesses',
    url: 'https://weekly.fixture.test/payment-reconciliation-demand',
    summary: 'Small businesses want payment reconciliation across providers.',
    age: 5 * DAY,
  },
];

interface FixtureHit {
  objectID: string;
  title: string;
  url: string | null;
  story_text: string | null;
  points: number;
  num_comments: number;
  age: number;
}

/** The Hacker News search answer: 5 discussions. */
const HN_HITS: FixtureHit[] = [
  {
    objectID: '9001',
    title: 'Ask HN: How do you reconcile invoices across three payment providers?',
    url: null,
    story_text: '<p>We reconcile invoices by hand every week and it takes two days.</p>',
    points: 120,
    num_comments: 85,
    age: 5 * HOUR,
  },
  {
    objectID: '9002',
    title: 'Our AI agent opened 40 pull requests and broke CI',
    url: 'https://blog.fixture.test/agent-broke-ci',
    story_text: null,
    points: 300,
    num_comments: 150,
    age: 18 * HOUR,
  },
  {
    objectID: '9003',
    title: 'Ask HN: Is anyone else drowning in flaky tests?',
    url: null,
    story_text: 'Flaky tests block every merge on our team.',
    points: 80,
    num_comments: 60,
    age: 2 * DAY,
  },
  {
    objectID: '9004',
    title: 'Late invoice payments are killing my freelance business',
    url: 'https://blog.fixture.test/late-invoices',
    story_text: 'Clients pay invoices sixty days late.',
    points: 45,
    num_comments: 30,
    age: 3 * DAY,
  },
  {
    objectID: '9005',
    title: 'Code review is the new bottleneck with AI coding agents',
    url: 'https://blog.fixture.test/code-review-bottleneck',
    story_text: null,
    points: 150,
    num_comments: 90,
    age: 4 * DAY,
  },
];

/** `text` escaped for XML text and attribute values. */
function xml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/**
 * An RSS 2.0 feed of `entries`, dated relative to `now` (an entry without an age has no `pubDate`).
 * @param title the channel title
 */
export function rss(now: Date, entries: readonly FixtureEntry[], title = 'Fixture Tech Daily'): string {
  const items = entries
    .map(
      (e) =>
        `<item><title>${xml(e.title)}</title><link>${xml(e.url)}</link><description>${xml(e.summary)}</description>${
          e.age === null ? '' : `<pubDate>${new Date(now.getTime() - e.age).toUTCString()}</pubDate>`
        }</item>`,
    )
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>${xml(title)}</title><link>https://news.fixture.test/</link><description>Fixture news</description>\n${items}\n</channel></rss>\n`;
}

/** The Atom feed of {@link ATOM_ENTRIES}, dated relative to `now`. */
export function atom(now: Date): string {
  const entries = ATOM_ENTRIES.map((e) => {
    const when = new Date(now.getTime() - (e.age ?? 0)).toISOString();
    return `<entry><title>${xml(e.title)}</title><link href="${xml(e.url)}"/><id>${xml(e.url)}</id><updated>${when}</updated><published>${when}</published><summary type="html">${xml(e.summary)}</summary></entry>`;
  }).join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom"><title>Fixture Weekly</title><id>urn:fixture:weekly</id><updated>${now.toISOString()}</updated>\n${entries}\n</feed>\n`;
}

/** The Hacker News search answer: the first `hitsPerPage` of {@link HN_HITS}, dated relative to `now`. */
export function hn(now: Date, hitsPerPage: number): string {
  return JSON.stringify({
    hits: HN_HITS.slice(0, hitsPerPage).map(({ age, ...hit }) => ({
      ...hit,
      created_at: new Date(now.getTime() - age).toISOString(),
    })),
    nbHits: HN_HITS.length,
    page: 0,
    hitsPerPage,
  });
}
