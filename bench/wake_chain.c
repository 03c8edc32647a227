// A reference for bench/probes_vs_rt_tests.py: the wake-up chain of rtgauge's `wakeup` probe written
// in plain C, so that rtgauge's own cost can be told from the shape of what is measured.
//
//   wake_chain chain    sem|mq|signal CPU LOOPS   rtgauge's shape (the ARM9/ARM11 paper's chain): a
//       handler at FIFO 99 woken every 1 ms by a periodic timerfd posts to a task at FIFO 98 on the
//       same CPU; the task's wake-up - the handler's post.
//   wake_chain pingpong sem           CPU LOOPS   ptsematest's shape: the receiver sleeps 1 ms, wakes
//       the sender and blocks; the sender (woken by it, not by a timer) posts; both at FIFO 99; the
//       receiver's wake-up - the sender's post.
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
static double sum_ns;
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
    for (int i = 0; i < loops; i++) {
        take();
        sum_ns += now() - posted;
    }
    return NULL;
}

static void *pingpong_sender(void *a) {
    (void)a;
    rt(99);
    for (int i = 0; i < loops; i++) {
        while (sem_wait(&sem_sync)) {}
        posted = now();
        sem_post(&sem_test);
    }
    return NULL;
}

static void *pingpong_receiver(void *a) {
    (void)a;
    rt(99);
    struct timespec d = {0, 1000000};
    for (int i = 0; i < loops; i++) {
        nanosleep(&d, NULL);
        sem_post(&sem_sync);
        while (sem_wait(&sem_test)) {}
        sum_ns += now() - posted;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 5 || (strcmp(argv[1], "chain") && strcmp(argv[1], "pingpong"))) {
        fprintf(stderr, "usage: wake_chain chain|pingpong sem|mq|signal CPU LOOPS\n");
        return 2;
    }
    int chain = !strcmp(argv[1], "chain");
    const char *which = getenv("WAKE_CHAIN_SIGNAL");
    wake_sig = which && !strcmp(which, "rt") ? SIGRTMIN + 2 : SIGUSR1;
    via = !strcmp(argv[2], "mq") ? MQ : !strcmp(argv[2], "signal") ? SIG : SEM;
    cpu = atoi(argv[3]);
    loops = atoi(argv[4]);
    if (!chain && via != SEM) {
        fprintf(stderr, "wake_chain: pingpong is made with sem only\n");
        return 2;
    }
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
    usleep(2000);
    pthread_create(&a, NULL, chain ? chain_handler : pingpong_sender, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%.3f\n", sum_ns / loops / 1e3);
    return 0;
}
