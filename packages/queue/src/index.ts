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
export {
  COMPUTE_DELIVERY_LIMIT,
  COMPUTE_TOPOLOGY,
  EVENT_DELIVERY_LIMIT,
  JobErrorCode,
  JOB_ERROR_MESSAGES,
  publicJobError,
  JobEvent,
  PipelineKind,
  RunnerHeartbeat,
  StepCommand,
  StepOutcome,
  UpstreamHealth,
  declareComputeTopology,
  stepRoutingKey,
} from './compute';
