import Docker from 'dockerode';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { managerConnection } from './swarmServiceSpec.js';

/**
 * The Swarm manager a runner talks to: `--docker-host`, else DOCKER_HOST, else the local
 * socket (TLS material from DOCKER_CERT_PATH when DOCKER_TLS_VERIFY=1). One place, so the
 * provider and gc reach the same manager.
 */
export function connectSwarmManager(dockerHost: string | undefined, env: NodeJS.ProcessEnv): { docker: Docker; name: string } {
  const host = dockerHost ?? env.DOCKER_HOST;
  const name = host && host !== '' ? host : 'unix:///var/run/docker.sock';
  const conn = managerConnection(host, { verify: env.DOCKER_TLS_VERIFY === '1', certPath: env.DOCKER_CERT_PATH });
  if ('socketPath' in conn) return { docker: new Docker({ socketPath: conn.socketPath }), name };
  const { certPath, ...rest } = conn;
  const docker = new Docker({
    ...rest,
    ...(certPath
      ? {
          ca: readFileSync(join(certPath, 'ca.pem')),
          cert: readFileSync(join(certPath, 'cert.pem')),
          key: readFileSync(join(certPath, 'key.pem')),
        }
      : {}),
  } as Docker.DockerOptions);
  return { docker, name };
}
