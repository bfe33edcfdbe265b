import { describeConsumer } from './consumer-contract';
import { registryNode } from './toolchain';

/** Verified: installs from the npm registry in ~5 s, runs Nest 12's ES modules natively. */
const NODE_24 = '24.22.3';

// Nest 12 ships only ES modules and wants Node 22+: an ES module app on Node 24, with the
// library still CommonJS (it loads Nest through require() of ES modules).
describeConsumer({
  name: 'nest12',
  title: `Nest 12, ES modules, TypeORM 1, Node ${NODE_24}`,
  packageJson: 'nest12.package.json',
  runtime: () => registryNode(NODE_24),
});
