import { describeConsumer } from './consumer-contract';
import { currentNode } from './toolchain';

// Nest 11 as most users have it today: a CommonJS app, on the Node.js running the tests.
describeConsumer({
  name: 'nest11',
  title: `Nest 11, CommonJS, TypeORM 0.3, Node ${process.versions.node}`,
  packageJson: 'nest11.package.json',
  runtime: () => Promise.resolve(currentNode()),
});
