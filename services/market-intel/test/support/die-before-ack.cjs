'use strict';
// Preloaded into a pipeline-runner (`node --require`) by the compute end-to-end test: the first time
// the runner is about to ack the step command DIE_BEFORE_ACK names (`<kind>:<stepIndex>`), which is
// after the step's outcome was published and confirmed, the process SIGKILLs itself. The runner's code
// runs unchanged; the seam is amqplib's Channel#ack, a library's method, not one of our modules.
const path = require('node:path');

const target = process.env.DIE_BEFORE_ACK;
if (target) {
  // The amqplib the runner loads: @repo/queue's (Node caches modules by real path, so this is the same class).
  const queueDir = path.dirname(require.resolve('@repo/queue'));
  const amqplibMain = require.resolve('amqplib', { paths: [queueDir] });
  const { Channel } = require(path.join(path.dirname(amqplibMain), 'lib', 'channel_model.js'));
  const ack = Channel.prototype.ack;
  Channel.prototype.ack = function ackOrDie(message, allUpTo) {
    let command;
    try {
      command = JSON.parse(message.content.toString('utf8'));
    } catch {
      command = undefined;
    }
    if (command && `${command.kind}:${command.stepIndex}` === target) {
      // Named in the runner's output, for a test that expected another job's command.
      process.stderr.write(`die-before-ack: SIGKILL before acking ${command.jobId}:${command.stepIndex}\n`);
      process.kill(process.pid, 'SIGKILL');
    }
    return ack.call(this, message, allUpTo);
  };
}
