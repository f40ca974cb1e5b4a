// The one-time set-up of the in-cluster MongoDB, run after the first apply (docs/deploy.md):
//   kubectl -n <namespace> exec mongodb-0 -- mongosh --quiet --norc --file /etc/mongodb/config/mongodb-init.js
// It makes the three members the replica set rs0, then creates, through the localhost exception
// (allowed while no user exists), the administrator `root` and the pet service's user `petstore`
// with readWrite on the database petstore only. Passwords are read from the Secret mongodb-auth
// mounted in the pod, never typed or passed as arguments. Running it again changes nothing.
const fs = require('fs');
const secret = (name) => fs.readFileSync(`/etc/mongodb-auth/${name}`, 'utf8').replace(/\r?\n$/, '');
const admin = db.getSiblingDB('admin');

let authenticated = false;
try {
  authenticated = admin.auth('root', secret('root-password')).ok === 1;
} catch {
  // No user yet: the localhost exception applies.
}

let initiated = true;
try {
  rs.status();
} catch (error) {
  if (error.codeName !== 'NotYetInitialized') throw error;
  initiated = false;
}
if (!initiated) {
  const namespace = process.env.NAMESPACE;
  rs.initiate({
    _id: 'rs0',
    members: [0, 1, 2].map((i) => ({ _id: i, host: `mongodb-${i}.mongodb.${namespace}.svc.cluster.local:27017` })),
  });
}
for (let waited = 0; !db.hello().isWritablePrimary; waited += 1) {
  if (waited > 120) throw new Error('no primary after 60 s');
  sleep(500);
}

if (!authenticated) {
  admin.createUser({ user: 'root', pwd: secret('root-password'), roles: ['root'] });
  admin.auth('root', secret('root-password'));
}
const petstore = db.getSiblingDB('petstore');
if (petstore.getUser('petstore') === null) {
  petstore.createUser({ user: 'petstore', pwd: secret('petstore-password'), roles: [{ role: 'readWrite', db: 'petstore' }] });
}
print('rs0 initiated; users root (admin) and petstore (readWrite on petstore) present');
