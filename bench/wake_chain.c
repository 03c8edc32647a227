// A reference for bench/probes_vs_rt_tests.py: the wake-up chain of rtgauge's `wakeup` probe written
// in plain C, so that rtgauge's own cost can be told from the shape of what is measured.
//
//   wake_chain chain    sem|mq|signal CPU LOOPS   rtgauge's shape (the ARM9/ARM11 paper's chain): a
//       handler at FIFO 99 woken every 1 ms by a periodic timerfd posts to a task at FIFO 98 on the
//       same CPU; the task's wake-up - the handler's post.
//   wake_chain pingpong sem|signal    CPU LOOPS   ptsematest's shape: the receiver sleeps 1 ms, wakes
//       the sender and blocks; the sender (woken by it, not by a timer) posts; both at FIFO 99; the
//       receiver's wake-up - the sender's post. A signal is sent with a raw tgkill, or with
//       WAKE_CHAIN_KILL=pthread by glibc's pthread_kill, as sigwaittest sends it.
//
// The signal is SIGUSR1 (sigwaittest's), or with WAKE_CHAIN_SIGNAL=rt SIGRTMIN+2 (rtgauge's).
// Prints the mean in microseconds. Memory locked, /dev/cpu_dma_latency held at 0 (as rtgauge does).
// Build: gcc -O2 -o wake_chain wake_chain.c -lpthread -lrt
#define _GNU_SOURCE
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum via { SEM, MQ, SIG };
static enum via via;
static int cpu, loops;
static sem_t sem_test, sem_sync;
static mqd_t mq;
static volatile pid_t task_tid;
static volatile uint64_t posted;
// The number of the latest event posted: a standard signal (SIGUSR1) is not queued, so two sent
// while the task is held merge into one; the task takes the latest event, as rtgauge's does.
static volatile uint64_t seq;
static double sum_ns;
static uint64_t taken_count;  // events the chain's task took (the ping-pong takes every one)
static int wake_sig;

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

static void rt(int prio) {
    struct sched_param s = {.sched_priority = prio};
    cpu_set_t m;
    CPU_ZERO(&m);
    CPU_SET(cpu, &m);
    if (sched_setaffinity(0, sizeof m, &m) || sched_setscheduler(0, SCHED_FIFO, &s)) {
        perror("wake_chain: affinity or SCHED_FIFO");
        exit(1);
    }
}

static void post(void) {
    char b[8] = {0};
    if (via == SEM) sem_post(&sem_test);
    else if (via == MQ) mq_send(mq, b, sizeof b, 0);
    else syscall(SYS_tgkill, getpid(), task_tid, wake_sig);
}

static void take(void) {
    char b[8];
    sigset_t set;
    if (via == SEM) while (sem_wait(&sem_test)) {}
    else if (via == MQ) while (mq_receive(mq, b, sizeof b, NULL) < 0) {}
    else {
        sigemptyset(&set);
        sigaddset(&set, wake_sig);
        while (sigwaitinfo(&set, NULL) < 0) {}
    }
}

static void *chain_handler(void *a) {
    (void)a;
    rt(99);
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    uint64_t start = now() + 5000000, n;
    struct itimerspec it = {{0, 1000000}, {start / 1000000000, start % 1000000000}};
    timerfd_settime(fd, TFD_TIMER_ABSTIME, &it, NULL);
    for (int i = 0; i < loops; i++) {
        if (read(fd, &n, sizeof n) != sizeof n) exit(1);
        posted = now();
        __atomic_store_n(&seq, (uint64_t)i + 1, __ATOMIC_RELEASE);
        post();
    }
    return NULL;
}

static void *chain_task(void *a) {
    (void)a;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, wake_sig);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    task_tid = gettid();
    rt(98);
    for (uint64_t taken = 0; taken < (uint64_t)loops;) {
        take();
        uint64_t t = now(), s = __atomic_load_n(&seq, __ATOMIC_ACQUIRE);
        if (s > taken) {  // (a wake-up for an event already taken is not a new one)
            sum_ns += t - posted;
            taken_count++;
            taken = s;
        }
    }
    return NULL;
}

// The ping-pong's two threads, for a signal: each takes the signal with sigwaitinfo, and is sent
// one by a raw tgkill, or with WAKE_CHAIN_KILL=pthread by glibc's pthread_kill (sigwaittest's way,
// which blocks every signal around its tgkill).
static pthread_t sender_thread, receiver_thread;
static volatile pid_t sender_tid, receiver_tid;
static int use_pthread_kill;

static void ping(int to_sender) {
    if (via != SIG) {
        sem_post(to_sender ? &sem_sync : &sem_test);
    } else if (use_pthread_kill) {
        pthread_kill(to_sender ? sender_thread : receiver_thread, wake_sig);
    } else {
        syscall(SYS_tgkill, getpid(), to_sender ? sender_tid : receiver_tid, wake_sig);
    }
}

static void wait_ping(int as_sender) {
    if (via != SIG) {
        while (sem_wait(as_sender ? &sem_sync : &sem_test)) {}
    } else {
        take();
    }
}

static void *pingpong_sender(void *a) {
    (void)a;
    sender_tid = gettid();
    rt(99);
    for (int i = 0; i < loops; i++) {
        wait_ping(1);
        posted = now();
        ping(0);
    }
    return NULL;
}

static void *pingpong_receiver(void *a) {
    (void)a;
    receiver_tid = gettid();
    rt(99);
    struct timespec d = {0, 1000000};
    while (!sender_tid) nanosleep(&d, NULL);
    for (int i = 0; i < loops; i++) {
        nanosleep(&d, NULL);
        ping(1);
        wait_ping(0);
        sum_ns += now() - posted;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 5 || (strcmp(argv[1], "chain") && strcmp(argv[1], "pingpong"))) {
        fprintf(stderr, "usage: wake_chain chain sem|mq|signal CPU LOOPS, or pingpong sem|signal CPU LOOPS\n");
        return 2;
    }
    int chain = !strcmp(argv[1], "chain");
    const char *which = getenv("WAKE_CHAIN_SIGNAL");
    wake_sig = which && !strcmp(which, "rt") ? SIGRTMIN + 2 : SIGUSR1;
    via = !strcmp(argv[2], "mq") ? MQ : !strcmp(argv[2], "signal") ? SIG : SEM;
    cpu = atoi(argv[3]);
    loops = atoi(argv[4]);
    if (!chain && via == MQ) {
        fprintf(stderr, "wake_chain: pingpong is made with sem or signal\n");
        return 2;
    }
    const char *kill_how = getenv("WAKE_CHAIN_KILL");
    use_pthread_kill = kill_how && !strcmp(kill_how, "pthread");
    int zero = 0, lat = open("/dev/cpu_dma_latency", O_WRONLY);
    if (lat >= 0 && write(lat, &zero, sizeof zero) != sizeof zero) perror("cpu_dma_latency");
    mlockall(MCL_CURRENT | MCL_FUTURE);
    sem_init(&sem_test, 0, 0);
    sem_init(&sem_sync, 0, 0);
    if (via == MQ) {
        char name[64];
        struct mq_attr attr = {.mq_maxmsg = 8, .mq_msgsize = 8};
        snprintf(name, sizeof name, "/wake_chain.%d", getpid());
        mq = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &attr);
        if (mq == (mqd_t)-1) {
            perror("mq_open");
            return 1;
        }
        mq_unlink(name);
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, wake_sig);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    pthread_t a, b;
    pthread_create(&b, NULL, chain ? chain_task : pingpong_receiver, NULL);
    receiver_thread = b;
    usleep(2000);
    pthread_create(&a, NULL, chain ? chain_handler : pingpong_sender, NULL);
    sender_thread = a;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%.3f\n", sum_ns / (chain ? (double)taken_count : loops) / 1e3);
    return 0;
}
