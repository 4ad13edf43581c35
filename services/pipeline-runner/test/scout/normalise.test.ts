import fc from 'fast-check';
import { keywordCounts } from '../../src/domain/scout/keywords';
import {
  canonicalUrl,
  itemHash,
  normaliseItems,
  plainText,
  titleKey,
} from '../../src/domain/scout/normalise';
import type { RawItem } from '../../src/domain/scout/parse';
import { parseFeedItems, parseHnItems } from '../../src/domain/scout/parse';
import { DEFAULT_SCOUT_FETCH_SETTINGS } from '../../src/domain/scout/settings';

const fetchedAt = new Date('2026-11-23T12:00:00.000Z');

function entry(patch: Partial<RawItem> = {}): RawItem {
  return {
    kind: 'article',
    url: 'https://example.com/story',
    title: 'A perfectly ordinary English headline about software',
    summary: 'Engineers describe how the new release changes their daily work.',
    publishedAt: new Date('2026-11-22T08:00:00.000Z'),
    ...patch,
  };
}

describe('canonical URLs', () => {
  it.each([
    ['HTTPS://Example.COM:443/a/b/?utm_source=x&b=2&a=1#frag', 'https://example.com/a/b?a=1&b=2'],
    ['http://example.com:80/', 'http://example.com/'],
    ['http://example.com:8080/x//', 'http://example.com:8080/x'],
    ['https://example.com/p?fbclid=1&gclid=2&ref=home&utm_medium=feed', 'https://example.com/p'],
    ['https://user:pw@example.com/p?b=2&b=1', 'https://example.com/p?b=1&b=2'],
    ['https://example.com', 'https://example.com/'],
    ['https://example.com/p?reference=kept', 'https://example.com/p?reference=kept'],
  ])('When %s is canonicalised, then it is %s', (input, expected) => {
    expect(canonicalUrl(input)).toBe(expected);
  });

  it('When a link is not an absolute http(s) URL, then it has no canonical form', () => {
    expect(canonicalUrl('/relative/path')).toBeNull();
    expect(canonicalUrl('mailto:someone@example.com')).toBeNull();
    expect(canonicalUrl('javascript:alert(1)')).toBeNull();
  });

  it('When any http(s) URL is canonicalised twice, then the second pass changes nothing', () => {
    fc.assert(
      fc.property(
        fc.webUrl({ withQueryParameters: true, withFragments: true }),
        fc.array(fc.tuple(fc.constantFrom('utm_source', 'fbclid', 'b', 'a', 'ref', 'z'), fc.string()), {
          maxLength: 4,
        }),
        (url, params) => {
          const withParams = new URL(url);
          for (const [k, v] of params) withParams.searchParams.append(k, v);
          // fc.webUrl makes only http(s) URLs, which always have a canonical form.
          const once = canonicalUrl(withParams.toString());
          expect(once).not.toBeNull();
          expect(canonicalUrl(once as string)).toBe(once);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('When the hash is computed, then it is the SHA-256 hex of the canonical URL', () => {
    expect(itemHash('https://example.com/')).toBe(
      '0f115db062b7c0dd030b16878c99dea5c354b49dc37b38eb8846179c7783e9d7',
    );
  });
});

describe('normalisation', () => {
  const source = (id: string, entries: RawItem[]) => ({ source: { id, name: `Source ${id}` }, entries });

  it('When two sources carry the same story (same canonical URL or same title), then the first is kept and the copies are counted as duplicates', () => {
    const out = normaliseItems(
      [
        source('a', [entry({ url: 'https://example.com/story/?utm_source=a' })]),
        source('b', [
          entry({ url: 'https://EXAMPLE.com/story#top' }),
          entry({
            url: 'https://other.example/x',
            title: 'A perfectly ordinary ENGLISH headline, about software!',
          }),
        ]),
      ],
      DEFAULT_SCOUT_FETCH_SETTINGS,
      fetchedAt,
    );
    expect(out.items.map((i) => [i.source, i.sourceName, i.url])).toEqual([
      ['a', 'Source a', 'https://example.com/story'],
    ]);
    expect(out.dropped).toEqual({ duplicate: 2, language: 0, length: 0 });
    expect(out.kept).toEqual({ a: 1, b: 0 });
  });

  it('When titles are missing or short, or the language is not allowed, then the items are dropped and counted', () => {
    const out = normaliseItems(
      [
        source('a', [
          entry({ title: null, url: 'https://example.com/1' }),
          entry({ title: 'Too short', url: 'https://example.com/2' }),
          entry({ url: null }),
          entry({
            url: 'https://example.com/3',
            title: 'Die Bundesregierung plant neue Regeln für digitale Zahlungen',
            summary: 'Nach Angaben des Ministeriums sollen die Banken ihre Gebühren offenlegen.',
          }),
          entry({ url: 'https://example.com/4' }),
        ]),
      ],
      { ...DEFAULT_SCOUT_FETCH_SETTINGS, minTitleChars: 12 },
      fetchedAt,
    );
    expect(out.dropped).toEqual({ duplicate: 0, language: 1, length: 3 });
    expect(out.items).toHaveLength(1);
    expect(out.items[0]!.lang).toBe('en');
    const german = normaliseItems(
      [
        source('a', [
          entry({
            url: 'https://example.com/3',
            title: 'Die Bundesregierung plant neue Regeln für digitale Zahlungen',
            summary: 'Nach Angaben des Ministeriums sollen die Banken ihre Gebühren offenlegen.',
          }),
        ]),
      ],
      { ...DEFAULT_SCOUT_FETCH_SETTINGS, languages: ['en', 'de'] },
      fetchedAt,
    );
    expect(german.items.map((i) => i.lang)).toEqual(['de']);
  });

  it('When summaries hold HTML or run long, then they become plain text cut to the limit; missing or future dates become the fetch time', () => {
    const out = normaliseItems(
      [
        source('a', [
          entry({
            url: 'https://example.com/1',
            summary: `<p>Hello <b>builders</b> &amp; <a href="https://x">friends</a><img src="x.png"></p><script>x</script>${' word'.repeat(400)}`,
            publishedAt: null,
          }),
          entry({
            url: 'https://example.com/2',
            title: 'Another ordinary headline about databases',
            publishedAt: new Date('2027-06-01T00:00:00Z'),
          }),
        ]),
      ],
      { ...DEFAULT_SCOUT_FETCH_SETTINGS, maxSummaryChars: 100 },
      fetchedAt,
    );
    expect(out.items[0]!.summary.startsWith('Hello builders & friends word')).toBe(true);
    expect(out.items[0]!.summary.length).toBeLessThanOrEqual(100);
    expect(out.items[0]!.summary.endsWith('…')).toBe(true);
    expect(out.items.map((i) => i.publishedAt)).toEqual([fetchedAt.toISOString(), fetchedAt.toISOString()]);
  });

  it('When a source has more entries than the cap, then only the first ones are considered', () => {
    const entries = Array.from({ length: 8 }, (_, i) =>
      entry({
        url: `https://example.com/${i}`,
        title: `Ordinary English headline number ${i} about software teams`,
      }),
    );
    const out = normaliseItems(
      [source('a', entries)],
      { ...DEFAULT_SCOUT_FETCH_SETTINGS, maxItemsPerSource: 3 },
      fetchedAt,
    );
    expect(out.items.map((i) => i.url)).toEqual([
      'https://example.com/0',
      'https://example.com/1',
      'https://example.com/2',
    ]);
  });

  it('When titles differ only in case, accents and punctuation, then they share a key', () => {
    expect(titleKey('Café  prices — UP 10%!')).toBe(titleKey('cafe prices up 10'));
  });

  it('When HTML is converted, then tags and entities are gone', () => {
    expect(plainText('<h2>Title</h2><p>a &lt;b&gt; c</p>')).toBe('Title a <b> c');
  });
});

describe('parsing', () => {
  it('When a search answer is not what the API sends, then it is malformed', () => {
    expect(() => parseHnItems('not json')).toThrow('malformed JSON');
    expect(() => parseHnItems('{"hits": [{"title": "x"}]}')).toThrow('unexpected search API answer');
  });

  it('When a hit has no URL, then its Hacker News page is the URL; points and comments are kept', () => {
    const [hit] = parseHnItems(
      JSON.stringify({
        hits: [
          {
            objectID: '42',
            title: 'Ask HN: x',
            url: null,
            points: 3,
            num_comments: 1,
            created_at: '2026-11-20T00:00:00Z',
          },
        ],
      }),
    );
    expect(hit).toMatchObject({
      kind: 'discussion',
      url: 'https://news.ycombinator.com/item?id=42',
      points: 3,
      comments: 1,
    });
  });

  it('When XML is broken or not a feed, then it is malformed', () => {
    expect(() => parseFeedItems('<rss><channel><item><title>x</ti')).toThrow('malformed feed');
    expect(() => parseFeedItems('<html><body>hi</body></html>')).toThrow('malformed feed');
  });
});

describe('keywords', () => {
  it('When keywords are counted, then words and bigrams are counted per occurrence, stopwords break bigrams and single occurrences are left out', () => {
    expect(
      keywordCounts([
        'Code review is slow',
        'The code review of flaky tests',
        'Flaky tests and code',
        'review',
      ]),
    ).toEqual([
      { keyword: 'code', count: 3 },
      { keyword: 'review', count: 3 },
      { keyword: 'code review', count: 2 },
      { keyword: 'flaky', count: 2 },
      { keyword: 'flaky tests', count: 2 },
      { keyword: 'tests', count: 2 },
    ]);
  });
});
