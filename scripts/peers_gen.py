#!/usr/bin/env python3
"""(Ported from ../shared/tools/peers-kit/gen.py so scripts/compare.sh runs without ../shared.)

Generate a small realistic Claude Code transcript (+ optional large replica).

usage: gen.py small OUT.jsonl
       gen.py big OUT.jsonl TARGET_MB      (env FAKE_PEM=path of the throwaway key)
Planted fake secrets (generated locally, not real credentials):
  AWS access key id + secret, GitHub classic PAT, RSA PEM private key
"""
import json, sys, uuid, random

random.seed(7)
import os, subprocess
# Fake secrets, assembled at run time so no scanner-shaped literal sits in this file.
PEM_PATH = os.environ.get('FAKE_PEM', '/tmp/peers/sample/fake_rsa.pem')
if not os.path.exists(PEM_PATH):  # throwaway key, generated locally, never a real credential
    os.makedirs(os.path.dirname(PEM_PATH), exist_ok=True)
    pem = subprocess.run(['openssl', 'genrsa', '-traditional', '1024'], capture_output=True, text=True).stdout
    if 'BEGIN RSA' not in pem:
        pem = subprocess.run(['openssl', 'genrsa', '1024'], capture_output=True, text=True).stdout
    open(PEM_PATH, 'w').write(pem)
PEM = open(PEM_PATH).read()
AWS_ID = 'AK' + 'IA' + 'QYLPMN5HHHFPZAM2'
AWS_SECRET = ''.join(['q9Xf2Lm8', 'Rt4Vb6Nc', '1Zp3Hs7J', 'k0Wd5Ye8', 'Ua2Tg4Qe'])
GH = 'gh' + 'p_' + 'R8nT2vK9pL4mQ7wX3zB6' + 'yC1dF5gH0jS8aE2u'  # 36 chars after the prefix
SESSION = '3f2b8c1e-6d4a-4f7e-9b2c-8a1d5e6f7a90'
CWD = '/home/alice/proj'
BASE = dict(isSidechain=False, userType='external', cwd=CWD, sessionId=SESSION,
            version='2.0.14', gitBranch='main')


def u():
    return str(uuid.UUID(int=random.getrandbits(128), version=4))


def tid():
    return 'toolu_01' + ''.join(random.choice('ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789') for _ in range(22))


class T:
    def __init__(self):
        self.parent = None
        self.t = 0
        self.lines = []

    def ts(self):
        self.t += 1
        return '2025-10-0%dT12:%02d:%02d.%03dZ' % (1 + (self.t // 3600) % 9, (self.t // 60) % 60, self.t % 60, self.t % 1000)

    def emit(self, rec, chain=True):
        self.lines.append(json.dumps(rec, ensure_ascii=False, separators=(',', ':')))
        if chain:
            self.parent = rec['uuid']

    def user(self, text):
        rec = dict(parentUuid=self.parent, **BASE, type='user',
                   message=dict(role='user', content=text), uuid=u(), timestamp=self.ts())
        self.emit(rec)
        return rec['uuid']

    def assistant(self, content, stop='end_turn'):
        rec = dict(parentUuid=self.parent, **BASE,
                   message=dict(id='msg_01' + u().replace('-', '')[:22], type='message', role='assistant',
                                model='claude-sonnet-4-5-20250929', content=content, stop_reason=stop,
                                stop_sequence=None,
                                usage=dict(input_tokens=4, cache_creation_input_tokens=1200,
                                           cache_read_input_tokens=15000, output_tokens=180,
                                           service_tier='standard')),
                   requestId='req_011C' + u().replace('-', '')[:20], type='assistant', uuid=u(), timestamp=self.ts())
        self.emit(rec)
        return rec

    def tool_result(self, tool_id, content, tur, is_error=False):
        rec = dict(parentUuid=self.parent, **BASE, type='user',
                   message=dict(role='user', content=[dict(tool_use_id=tool_id, type='tool_result',
                                                           content=content, is_error=is_error)]),
                   uuid=u(), timestamp=self.ts(), toolUseResult=tur)
        self.emit(rec)

    def snapshot(self, mid):
        self.emit(dict(type='file-history-snapshot', messageId=mid,
                       snapshot=dict(messageId=mid, trackedFileBackups={}, timestamp=self.ts()),
                       isSnapshotUpdate=False), chain=False)

    def round(self, i, secrets=True, pad=0):
        mid = self.user('Round %d: the deploy script fails, can you check the env and the key file?' % i)
        self.snapshot(mid)
        self.assistant([dict(type='thinking', thinking='User wants me to inspect env and key. Let me look.',
                             signature='EqQBCkYIBxgCKkB' + 'x' * 80)])
        t1 = tid()
        self.assistant([dict(type='text', text='Let me look at the environment file and the deploy key.'),
                        dict(type='tool_use', id=t1, name='Bash',
                             input=dict(command='cat .env deploy/id_rsa', description='Show env and key'))],
                       stop='tool_use')
        if secrets:
            out = ('AWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\nGITHUB_TOKEN=%s\nDEBUG=1\n%s'
                   % (AWS_ID, AWS_SECRET, GH, PEM))
        else:
            out = 'DEBUG=1\nLOG_LEVEL=info\n'
        if pad:
            out += ('build log line %d ok\n' % i) * pad
        self.tool_result(t1, out, dict(stdout=out, stderr='', interrupted=False, isImage=False))
        t2 = tid()
        self.assistant([dict(type='tool_use', id=t2, name='Read',
                             input=dict(file_path=CWD + '/deploy/run.sh'))], stop='tool_use')
        src = '#!/bin/sh\nset -e\nexport GH_TOKEN=%s\n./deploy --region eu-west-1\n' % (GH if secrets else '$GH_TOKEN')
        numbered = ''.join('%6d\u2192%s\n' % (n + 1, l) for n, l in enumerate(src.splitlines()))
        self.tool_result(t2, numbered, dict(type='text', file=dict(filePath=CWD + '/deploy/run.sh', content=src,
                                                                   numLines=4, startLine=1, totalLines=4)))
        self.assistant([dict(type='text', text='The script exports a hard-coded token and the region is eu-west-1. '
                                                  'I suggest moving the token to a secret store. \u00e9\u00e8 \u2713')])

    def extras(self):
        # unknown / future record types and fields must survive untouched
        self.emit(dict(type='x-future-record', someNewField={'nested': [1, 2.50, None, True]}, uuid=u(),
                       note='unknown record type; key order b,a', b=1, a=2), chain=False)
        self.emit(dict(type='system', subtype='compact_boundary', content='Conversation compacted',
                       isMeta=False, level='info', parentUuid=None, logicalParentUuid=self.parent,
                       compactMetadata=dict(trigger='auto', preTokens=155000), uuid=u(),
                       timestamp=self.ts(), **{k: v for k, v in BASE.items()}))
        self.user('This session is being continued from a previous conversation that ran out of context. '
                  'Summary: user is fixing the deploy script.')
        self.lines[-1] = self.lines[-1].replace('"type":"user"', '"type":"user","isCompactSummary":true', 1)


def main():
    mode, out = sys.argv[1], sys.argv[2]
    t = T()
    t.lines.append(json.dumps(dict(type='summary', summary='Fix deploy script env handling',
                                   leafUuid='00000000-0000-4000-8000-000000000000'), separators=(',', ':')))
    if mode == 'small':
        t.round(1, secrets=True)
        t.extras()
        t.round(2, secrets=False)
    else:
        target = float(sys.argv[3]) * 1024 * 1024
        size, i = 0, 0
        while size < target:
            i += 1
            n0 = len(t.lines)
            t.round(i, secrets=(i % 10 == 1), pad=30)
            if i % 50 == 0:
                t.extras()
            size += sum(len(l) + 1 for l in t.lines[n0:])
    with open(out, 'w') as f:
        f.write('\n'.join(t.lines) + '\n')


main()
