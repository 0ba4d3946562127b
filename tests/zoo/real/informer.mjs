// The client-node README's informer: list and watch ConfigMaps of one namespace, and restart
// 5 s after an error (the documented pattern). Runs unchanged on every 1.x release.
//
// 1.0.0 to 1.2.0 (fixed by PR #2429 in 1.3.0) never move the resume point past the first
// LIST: every reconnect replays from there, objects going back in time.
import { createRequire } from 'node:module';

const require = createRequire(process.env.CLIENT_DIR + '/');
const k8s = await import(require.resolve('@kubernetes/client-node'));
const namespace = process.argv[2] || 'default';

const kc = new k8s.KubeConfig();
kc.loadFromDefault();
const api = kc.makeApiClient(k8s.CoreV1Api);
const informer = k8s.makeInformer(kc, `/api/v1/namespaces/${namespace}/configmaps`, () =>
  api.listNamespacedConfigMap({ namespace }),
);
informer.on('error', () => setTimeout(() => informer.start(), 5000));
await informer.start();
