import { describeConsumer } from './consumer-contract';
import { currentNode } from './toolchain';

// Nest 11 as most users have it today: a CommonJS app, on the Node.js running the tests.
describeConsumer({
  name: 'nest11',
  title: `Nest 11, CommonJS, TypeORM 0.3, Node ${process.versions.node}`,
  packageJson: 'nest11.package.json',
  runtime: () => Promise.resolve(currentNode()),
  knownPeerConflicts: [
    // @nestjs/apollo 13 depends on Apollo 4's deprecated playground plugin (used only with
    // `playground: true`); @nestjs/apollo 14 no longer does.
    '@apollo/server@5.5.1 deduped invalid: "^4.0.0" from node_modules/@apollo/server-plugin-landing-page-graphql-playground',
  ],
});
