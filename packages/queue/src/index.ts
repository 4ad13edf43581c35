export { Broker, PublishError } from './broker';
export type {
  BrokerOptions,
  ConsumeOptions,
  Delivery,
  DeliveryHandler,
  PublishOptions,
  QueueLogger,
  Settlement,
  TopologySetup,
} from './broker';
