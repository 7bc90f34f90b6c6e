import Docker from 'dockerode';

export const TEST_IMAGES = { busybox: 'forge-test/busybox:1', bookworm: 'forge-test/bookworm:3' } as const;

/** Why docker tests cannot run here, or null when the engine answers and the image exists. */
export async function dockerUnavailable(image: string): Promise<string | null> {
  const docker = new Docker({ socketPath: '/var/run/docker.sock' });
  try {
    await docker.ping();
  } catch (e) {
    return `no Docker Engine answers on /var/run/docker.sock (${(e as Error).message}); run scripts/ensure-dockerd.sh`;
  }
  try {
    await docker.getImage(image).inspect();
  } catch {
    return `test image ${image} is missing; run scripts/build-test-images.sh`;
  }
  return null;
}
