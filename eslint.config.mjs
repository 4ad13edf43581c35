import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** Import specifiers of the deployable services (and relative paths into another service's folder). */
const SERVICE_PACKAGES = [
  '@repo/market-intel',
  '@repo/market-intel/*',
  '@repo/pipeline-runner',
  '@repo/pipeline-runner/*',
  '@repo/signal-feedback',
  '@repo/signal-feedback/*',
  '@repo/skill-router',
  '@repo/skill-router/*',
  '**/services/*/src/**',
  '**/market-intel/src/**',
  '**/pipeline-runner/src/**',
  '**/signal-feedback/src/**',
  '**/skill-router/src/**',
];

/** The job state machine of @repo/compute: domain rules, which data/ never imports (docs/architecture.md, "Layers"). */
const JOB_STATE_MACHINE_RULES = ['jobTransition', 'conditionalTransition', 'jobGuard', 'passesGuard'];

/** The `no-restricted-syntax` entry of every file: packages export named APIs, not `export *`. */
const EXPLICIT_EXPORTS = {
  selector: 'ExportAllDeclaration[source.value=/^@repo\\//]',
  message: 'Export an explicit named API.',
};

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/src/generated/**', '**/coverage/**', '**/.turbo/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/ban-ts-comment': [
        'error',
        { 'ts-ignore': true, 'ts-expect-error': 'allow-with-description' },
      ],
      'no-restricted-syntax': ['error', EXPLICIT_EXPORTS],
    },
  },
  // One way to refuse a configuration: ConfigError, whose message every refused boot prints.
  {
    files: ['packages/*/src/**/*.ts', 'services/*/src/**/*.ts'],
    ignores: ['packages/service-kit/src/config.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        EXPLICIT_EXPORTS,
        ...[
          'Literal[value=/^Invalid configuration/]',
          'TemplateElement[value.raw=/^Invalid configuration/]',
        ].map((selector) => ({
          selector,
          message:
            'Throw ConfigError from @repo/service-kit: it writes "Invalid configuration:" and the problems.',
        })),
      ],
    },
  },
  // The layers (docs/architecture.md, "Layers"): services import packages, never another service;
  // packages import no service; in a service, data/ imports neither domain/, adapters/ nor
  // entry-points/ (nor a domain rule kept in a package, such as the job state machine), and domain/
  // imports neither entry-points/ nor adapters/.
  {
    files: ['packages/**/*.ts', 'services/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: SERVICE_PACKAGES,
              message: 'A service is a deployable, not a library: share code through a package.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['services/*/src/data/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          // Domain rules that live in packages: a query that needs one gets it as a parameter.
          paths: [
            {
              name: '@repo/compute',
              importNames: JOB_STATE_MACHINE_RULES,
              message:
                'data/ applies no domain rule: the job state machine belongs to domain/ (the job lifecycle), which hands data/ the rows to write.',
            },
          ],
          patterns: [
            { group: SERVICE_PACKAGES, message: 'A service is a deployable, not a library.' },
            {
              group: [
                '**/domain',
                '**/domain/**',
                '**/entry-points',
                '**/entry-points/**',
                '**/adapters',
                '**/adapters/**',
              ],
              message:
                'data/ never imports domain/, adapters/ or entry-points/: domain depends on data, not the reverse.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['services/*/src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: SERVICE_PACKAGES, message: 'A service is a deployable, not a library.' },
            {
              group: ['**/entry-points', '**/entry-points/**', '**/adapters', '**/adapters/**'],
              message:
                'domain/ never imports entry-points/ or adapters/: entry points call the use cases, and adapters implement the ports domain/ declares.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
