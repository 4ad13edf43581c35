export { AtomicAmount, Base58, Error402, PaymentPayload, PaymentRequirements, PaymentResponse, X402Network } from './x402';
