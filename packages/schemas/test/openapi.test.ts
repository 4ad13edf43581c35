import { z } from 'zod';
import { toJsonSchema } from '../src/index';

describe('toJsonSchema', () => {
  it('When a string check has no standard format (startsWith, endsWith, includes), then only its pattern is written', () => {
    const json = toJsonSchema(
      z.object({
        key: z.string().startsWith('spk_'),
        tail: z.string().endsWith('.json'),
        word: z.string().includes('x'),
        mail: z.email(),
      }),
    );
    expect(json.properties).toEqual({
      key: { type: 'string', pattern: '^spk_.*' },
      tail: { type: 'string', pattern: '.*\\.json$' },
      word: { type: 'string', pattern: 'x' },
      mail: expect.objectContaining({ type: 'string', format: 'email' }),
    });
  });
});
