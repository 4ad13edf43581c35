// The credentials of a generated request: valid (a requirement the test holds), none, or garbage in one scheme's slot.
import fc from 'fast-check';
import type { CredentialSlot, FuzzAuth, FuzzOptions } from './fuzz-types';
import type { Obj } from './openapi-document';

/** Default garbage credentials (see {@link FuzzOptions.garbageCredentials}). */
function defaultGarbage(): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom('', ' ', 'null', 'undefined', 'Bearer ', 'x'.repeat(8000), '%00'),
    fc.string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
      maxLength: 80,
    }),
  );
}

/**
 * Credentials of one request: valid (a requirement whose schemes the test holds), none, or garbage
 * in one scheme's slot; garbage dominates when the test holds no valid credential.
 */
export function authArbitrary(
  security: readonly Obj[],
  held: ReadonlySet<string>,
  slotOf: (scheme: string) => CredentialSlot,
  garbage: FuzzOptions['garbageCredentials'],
): fc.Arbitrary<FuzzAuth> {
  const schemeNames = [...new Set(security.flatMap((req) => Object.keys(req)))];
  const validAlternatives = security
    .map((req) => Object.keys(req))
    .filter((names) => names.length > 0 && names.every((n) => held.has(n)))
    .map((names) => names.map(slotOf));
  const choices: fc.WeightedArbitrary<FuzzAuth>[] = [];
  if (validAlternatives.length > 0)
    choices.push({
      weight: 4,
      arbitrary: fc.constantFrom(...validAlternatives).map((slots): FuzzAuth => ({ mode: 'valid', slots })),
    });
  choices.push({ weight: 1, arbitrary: fc.constant<FuzzAuth>({ mode: 'none' }) });
  if (schemeNames.length > 0) {
    choices.push({
      weight: validAlternatives.length > 0 ? 1 : 4,
      arbitrary: fc.constantFrom(...schemeNames).chain((name) =>
        (garbage?.[name] ?? defaultGarbage()).map((value): FuzzAuth => ({
          mode: 'garbage',
          slot: slotOf(name),
          value,
        })),
      ),
    });
  }
  return fc.oneof(...choices);
}
