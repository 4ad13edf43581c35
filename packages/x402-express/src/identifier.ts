import {
  declarePaymentIdentifierExtension,
  extractAndValidatePaymentIdentifier,
  PAYMENT_IDENTIFIER,
} from '@x402/extensions/payment-identifier';
import { AppError } from '@repo/errors';

/**
 * The `payment-identifier` declaration of every `PAYMENT-REQUIRED` of a gateway that keeps payment
 * identifiers (optional: a payment without one is taken as before), declared with `@x402/extensions`
 * (docs/payments.md, "Retrying safely: payment identifiers").
 */
export const PAYMENT_IDENTIFIER_EXTENSIONS: Readonly<Record<string, unknown>> = Object.freeze({
  [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension(false),
});

/**
 * The `payment-identifier` id a v2 payment's `extensions` carry, validated by `@x402/extensions`
 * (`extractAndValidatePaymentIdentifier`: an object with `info.required` a boolean and `info.id`, when
 * present, 16-128 characters of letters, digits, `-` and `_`). The schema the payload echoes is not
 * compiled: it comes from the caller, and the declaration's own rules are the ones that hold.
 *
 * @param extensions the payload's `extensions`, as sent
 * @returns the id, or `undefined` when the payload carries no identifier
 * @throws AppError `invalid_payment_header` (400) with `details: { reason: "invalid_payment_identifier",
 *   errors }` (the extension's messages) when the extension is malformed
 */
export function paymentIdentifierOf(extensions: Record<string, unknown> | undefined): string | undefined {
  const extension = extensions?.[PAYMENT_IDENTIFIER];
  if (extension === undefined || extension === null) return undefined;
  const echoed =
    typeof extension === 'object' && !Array.isArray(extension)
      ? { info: (extension as { info?: unknown }).info }
      : extension;
  // Only `extensions` is read; the rest of a PaymentPayload plays no part in the check.
  const payload = { extensions: { [PAYMENT_IDENTIFIER]: echoed } } as unknown as Parameters<
    typeof extractAndValidatePaymentIdentifier
  >[0];
  const { id, validation } = extractAndValidatePaymentIdentifier(payload);
  if (!validation.valid)
    throw new AppError(
      'invalid_payment_header',
      `The payment-identifier extension is not valid: ${(validation.errors ?? []).join('; ').slice(0, 300)}`,
      { details: { reason: 'invalid_payment_identifier', errors: validation.errors ?? [] } },
    );
  return id ?? undefined;
}
